// Seeded inputs. The generators are written here (not std::normal_distribution,
// whose output is implementation-defined) so a seed replays the same tensors
// with any standard library.
#include "check/inputs.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>

#include "check/half.h"
#include "check/input_stream.h"
#include "core/parallel.h"
#include "core/errors.h"

namespace fa {

namespace {
// One value as the dtype stores it (fp32: unchanged).
float round_to(float v, DType d) {
  return d == DType::bf16 ? round_bf16(v) : d == DType::f16 ? round_f16(v) : v;
}
}  // namespace

void round_to_dtype(std::vector<float>& x, DType d) {
  if (d == DType::f32) return;
  for (float& v : x) v = round_to(v, d);
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

// Each tensor is generated in fixed chunks (input_stream.h), chunk c of
// tensor t from its own generator: the values depend on the seed alone, not on
// how many threads made them, and a paper-sized point (100M values) takes a
// fraction of a second on a many-core host instead of seconds on one core.
using namespace input_stream;
constexpr size_t kChunk = kInputChunk;

// x[i] = value(i, rng) with rng the generator of i's chunk; then rounded to dtype.
template <typename Value>
void generate(std::vector<float>& x, uint64_t seed, uint64_t tensor, DType dtype, Value value) {
  const int64_t chunks = int64_t((x.size() + kChunk - 1) / kChunk);
  parallel_for(chunks, 0, [&](int64_t c, int) {
    Rng rng(mix(seed, tensor, uint64_t(c)));
    const size_t end = std::min(x.size(), size_t(c + 1) * kChunk);
    for (size_t i = size_t(c) * kChunk; i < end; ++i) {
      x[i] = round_to(float(value(i, rng)), dtype);
    }
  });
}

// Adversarial scores: every query and key carries a common unit direction u,
//   q = a u + n_q,   k_j = a r_j u + n_k,   r_j ramping from -0.5 to 1 along the keys,
// so scale * q.k_j ~ scale a^2 r_j + noise: from about -30 to +60 in each row,
// increasing toward the end. The row maximum is among the last keys a row sees
// (for causal rows too), the running max keeps changing block after block,
// and exp of the peak (~1e26) overflows any softmax that skips the max
// subtraction in fp16 (exp overflows past 11.1) and comes close in float32.
constexpr double kPeakScore = 60.0;

void make_adversarial(const AttnProblem& p, HostInputs& in, uint64_t seed) {
  const int d = p.head_dim;
  const AdversarialDirection dir = adversarial_direction(p, seed);
  const double a = dir.a;
  const std::vector<double>& u = dir.u;
  generate(in.q, seed, kQ, p.dtype, [&](size_t i, Rng& r) { return a * u[i % d] + r.normal(); });
  const int64_t nk = p.seqlen_k;
  generate(in.k, seed, kK, p.dtype, [&](size_t i, Rng& r) {
    const int64_t j = int64_t(i / (size_t(p.heads_kv) * d)) % nk;  // key row (BSHD)
    const double ramp = nk > 1 ? -0.5 + 1.5 * double(j) / double(nk - 1) : 1.0;
    return a * ramp * u[i % d] + r.normal();
  });
  generate(in.v, seed, kV, p.dtype, [](size_t, Rng& r) { return r.normal(); });
}

// Outlier channels: head_dim / 64 of them (at least one), drawn once from the
// seed, multiplied by kOutlierScale in every row of Q and K; V stays N(0,1).
constexpr double kOutlierScale = 30.0;

void make_outliers(const AttnProblem& p, HostInputs& in, uint64_t seed) {
  const std::vector<double> gain = outlier_gains(p, seed);
  auto draw = [&](size_t i, Rng& r) { return gain[i % size_t(p.head_dim)] * r.normal(); };
  generate(in.q, seed, kQ, p.dtype, draw);
  generate(in.k, seed, kK, p.dtype, draw);
  generate(in.v, seed, kV, p.dtype, [](size_t, Rng& r) { return r.normal(); });
}

}  // namespace

namespace input_stream {

AdversarialDirection adversarial_direction(const AttnProblem& p, uint64_t seed) {
  AdversarialDirection out;
  out.u.resize(size_t(p.head_dim));
  Rng dir(mix(seed, kDirection, 0));
  double norm = 0;
  for (double& e : out.u) {
    e = dir.normal();
    norm += e * e;
  }
  for (double& e : out.u) e /= std::sqrt(norm);
  out.a = std::sqrt(kPeakScore / double(p.scale()));
  return out;
}

std::vector<double> outlier_gains(const AttnProblem& p, uint64_t seed) {
  const int d = p.head_dim;
  std::vector<double> gain(size_t(d), 1.0);
  Rng pick(mix(seed, kOutlierChannels, 0));
  for (int n = std::max(1, d / 64); n > 0;) {
    const size_t c = size_t(pick.uniform01() * d);
    if (gain[c] == 1.0) {
      gain[c] = kOutlierScale;
      --n;
    }
  }
  return gain;
}

}  // namespace input_stream

HostInputs generate_inputs(const AttnProblem& p, Distribution dist, uint64_t seed) {
  if (auto why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("generate_inputs: {}", why));
  HostInputs in;
  in.q.resize(size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim);
  in.k.resize(size_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim);
  in.v.resize(in.k.size());
  if (dist == Distribution::adversarial) {
    make_adversarial(p, in, seed);
  } else if (dist == Distribution::outliers) {
    make_outliers(p, in, seed);
  } else {
    auto draw = [dist](size_t, Rng& r) { return dist == Distribution::uniform ? r.uniform() : r.normal(); };
    generate(in.q, seed, kQ, p.dtype, draw);
    generate(in.k, seed, kK, p.dtype, draw);
    generate(in.v, seed, kV, p.dtype, draw);
  }
  return in;
}

std::vector<float> generate_dout(const AttnProblem& p, Distribution dist, uint64_t seed) {
  if (auto why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("generate_dout: {}", why));
  std::vector<float> dout(size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim);
  generate(dout, seed, kDout, p.dtype, [dist](size_t, Rng& r) {
    return dist == Distribution::uniform ? r.uniform() : r.normal();
  });
  return dout;
}

}  // namespace fa
