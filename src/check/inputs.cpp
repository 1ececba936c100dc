// Seeded inputs. The generators are written here (not std::normal_distribution,
// whose output is implementation-defined) so a seed replays the same tensors
// with any standard library.
#include "check/inputs.h"

#include <cmath>
#include <fmt/format.h>
#include <random>

#include "check/half.h"
#include "core/errors.h"

namespace fa {

std::string_view to_string(Distribution d) {
  switch (d) {
    case Distribution::normal: return "normal";
    case Distribution::uniform: return "uniform";
    case Distribution::adversarial: return "adversarial";
  }
  return "?";
}

std::optional<Distribution> parse_distribution(std::string_view s) {
  for (Distribution d : {Distribution::normal, Distribution::uniform, Distribution::adversarial})
    if (s == to_string(d)) return d;
  return std::nullopt;
}

void round_to_dtype(std::vector<float>& x, DType d) {
  if (d == DType::bf16)
    for (float& v : x) v = round_bf16(v);
  else if (d == DType::f16)
    for (float& v : x) v = round_f16(v);
}

namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double uniform01() { return double(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform() { return 2.0 * uniform01() - 1.0; }              // [-1, 1)
  double normal() {  // Box-Muller, one value per call (simple, deterministic)
    double u1 = 1.0 - uniform01();  // (0, 1]: log is finite
    double u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::mt19937_64 gen_;
};

void fill(std::vector<float>& x, Distribution d, Rng& rng) {
  for (float& v : x) v = float(d == Distribution::uniform ? rng.uniform() : rng.normal());
}

// Adversarial scores: every query and key carries a common unit direction u,
//   q = a u + n_q,   k_j = a r_j u + n_k,   r_j ramping from -0.5 to 1 along the keys,
// so scale * q.k_j ~ scale a^2 r_j + noise: from about -30 to +60 in each row,
// increasing toward the end. The row maximum is among the last keys a row sees
// (for causal rows too), the running max keeps changing block after block,
// and exp of the peak (~1e26) overflows any softmax that skips the max
// subtraction in fp16 (exp overflows past 11.1) and comes close in float32.
constexpr double kPeakScore = 60.0;

void make_adversarial(const AttnProblem& p, HostInputs& in, Rng& rng) {
  const int d = p.head_dim;
  std::vector<double> u(d);
  double norm = 0;
  for (double& e : u) {
    e = rng.normal();
    norm += e * e;
  }
  for (double& e : u) e /= std::sqrt(norm);
  const double a = std::sqrt(kPeakScore / double(p.scale()));
  for (size_t i = 0; i < in.q.size(); ++i) in.q[i] = float(a * u[i % d] + rng.normal());
  const int64_t nk = p.seqlen_k;
  for (size_t i = 0; i < in.k.size(); ++i) {
    const int64_t j = int64_t(i / (size_t(p.heads_kv) * d)) % nk;  // key row (BSHD)
    const double ramp = nk > 1 ? -0.5 + 1.5 * double(j) / double(nk - 1) : 1.0;
    in.k[i] = float(a * ramp * u[i % d] + rng.normal());
  }
  fill(in.v, Distribution::normal, rng);
}

}  // namespace

HostInputs generate_inputs(const AttnProblem& p, Distribution dist, uint64_t seed) {
  if (auto why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("generate_inputs: {}", why));
  HostInputs in;
  in.q.resize(size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim);
  in.k.resize(size_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim);
  in.v.resize(in.k.size());
  Rng rng(seed);
  if (dist == Distribution::adversarial) {
    make_adversarial(p, in, rng);
  } else {
    fill(in.q, dist, rng);
    fill(in.k, dist, rng);
    fill(in.v, dist, rng);
  }
  round_to_dtype(in.q, p.dtype);
  round_to_dtype(in.k, p.dtype);
  round_to_dtype(in.v, p.dtype);
  return in;
}

}  // namespace fa
