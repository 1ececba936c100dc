// Every registered cuda variant against the float64 reference, through the CUDA
// Executor (outputs poisoned with NaN before each run), over shapes that stress
// the edges: ragged tails, seqlen_q != seqlen_k both ways, seqlen 1, causal rows
// that see one key or none, GQA and MQA, head dims 64/128/256, bf16 and fp16.
// Skipped (not passed) without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "check/half.h"
#include "check/inputs.h"
#include "check/metrics.h"
#include "check/validate.h"
#include "core/errors.h"
#include "measure/executor.h"
#include "reference/reference.h"
#include "registry/kernel.h"

namespace fa {
namespace {

std::unique_ptr<Executor> cuda_or_skip(std::string* why) { return make_cuda_executor(0, why); }

#define SKIP_WITHOUT_CUDA(ex)                                                  \
  std::string why_;                                                            \
  auto ex = cuda_or_skip(&why_);                                               \
  if (!ex) GTEST_SKIP() << "no CUDA executor: " << why_

// The forward ones: backward entries need dO, O and LSE and are checked
// against the reference gradients in test_bwd_entries.cpp.
std::vector<const KernelVariant*> cuda_variants() {
  std::vector<const KernelVariant*> out;
  for (const auto& v : Registry::instance().all())
    if (v.backend == Backend::cuda && v.pass == Pass::fwd) out.push_back(&v);
  return out;
}

float round_to(float x, DType d) {
  return d == DType::bf16 ? round_bf16(x) : d == DType::f16 ? round_f16(x) : x;
}

// The standard family stores S in the dtype (as PyTorch's unfused bf16 attention
// does), which the project's rule (float32 S) does not model. Its bound is the same
// rule applied to a standard implementation that rounds S too: 2x that
// implementation's error + the dtype floor (flash-attention's own tests compare
// against exactly such a reference, upcast=False).
Tolerances standard_s_rounded_tolerance(const AttnProblem& p, const HostInputs& in,
                                        const ReferenceOutputs& ref, Tolerances t) {
  const int64_t nr = int64_t(ref.rows.size()), d = p.head_dim, group = p.heads / p.heads_kv;
  double o_err = 0, lse_err = 0;
  std::vector<float> s(p.seqlen_k), o(d);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t ri = 0; ri < nr; ++ri) {
        const int64_t row = ref.rows[ri], seen = p.keys_seen(row), hk = h / group;
        if (seen == 0) continue;
        const float* q = &in.q[((b * p.seqlen_q + row) * p.heads + h) * d];
        float mx = -INFINITY;
        for (int64_t j = 0; j < seen; ++j) {
          const float* k = &in.k[((b * p.seqlen_k + j) * p.heads_kv + hk) * d];
          float acc = 0;
          for (int64_t e = 0; e < d; ++e) acc += q[e] * k[e];
          s[j] = round_to(acc * p.scale(), p.dtype);
          mx = std::max(mx, s[j]);
        }
        float l = 0;
        for (int64_t j = 0; j < seen; ++j) l += std::exp(s[j] - mx);
        std::fill(o.begin(), o.end(), 0.f);
        for (int64_t j = 0; j < seen; ++j) {
          const float pj = round_to(std::exp(s[j] - mx) / l, p.dtype);
          const float* v = &in.v[((b * p.seqlen_k + j) * p.heads_kv + hk) * d];
          for (int64_t e = 0; e < d; ++e) o[e] += pj * v[e];
        }
        lse_err = std::max(lse_err, std::abs(double(mx + std::log(l)) - ref.lse[(b * p.heads + h) * nr + ri]));
        for (int64_t e = 0; e < d; ++e)
          o_err = std::max(o_err, std::abs(double(round_to(o[e], p.dtype)) -
                                           ref.o[((b * nr + ri) * p.heads + h) * d + e]));
      }
  t.tolerance = std::max(t.tolerance, 2 * o_err + dtype_floor(p.dtype));
  t.lse_tolerance = std::max(t.lse_tolerance, 1e-3 + 2 * lse_err);
  return t;
}

struct Case {
  int batch, heads, heads_kv, seqlen_q, seqlen_k;
};

// Runs every cuda variant that supports p; returns how many ran.
int check_problem(Executor& ex, const AttnProblem& p, Distribution dist, uint64_t seed) {
  const HostInputs in = generate_inputs(p, dist, seed);
  PointCheck check{reference_forward(p, in), {}};
  const Tolerances rule = tolerances_for(p, in, check.ref);
  ex.prepare(p, in);
  int ran = 0;
  for (const KernelVariant* v : cuda_variants()) {
    if (!v->supports(p).ok) continue;
    ++ran;
    SCOPED_TRACE(v->name + " on " + p.describe() + " " + std::string(to_string(dist)) +
                 " seed " + std::to_string(seed));
    ex.reserve_workspace(v->workspace_bytes ? v->workspace_bytes(p) : 0);
    check.tolerances =
        v->family == Family::standard ? standard_s_rounded_tolerance(p, in, check.ref, rule) : rule;
    Validation val;
    try {
      val = validate_variant(*v, p, ex, check, seed);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "run failed: " << e.what();
      continue;
    }
    const ErrorMetrics& m = val.errors;
    EXPECT_TRUE(val.passed) << "O max abs " << m.o_max_abs << " (tolerance " << check.tolerances.tolerance
                            << "), LSE max abs " << m.lse_max_abs << " (tolerance "
                            << check.tolerances.lse_tolerance << "), non-finite " << m.nonfinite;
  }
  return ran;
}

uint64_t fresh_seed() {
  const uint64_t s = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)s);
  return s;
}

TEST(GpuKernels, EveryCudaVariantMatchesTheReference) {
  SKIP_WITHOUT_CUDA(ex);
  const std::vector<Case> cases = {
      {2, 4, 4, 128, 128},   // whole blocks
      {1, 4, 1, 1, 1},       // seqlen 1, MQA
      {2, 6, 2, 257, 190},   // ragged, seqlen_q > seqlen_k (causal: early rows see nothing), GQA
      {1, 2, 2, 70, 333},    // seqlen_q < seqlen_k, ragged
      {3, 2, 1, 1, 77},      // one query row over a ragged key block
      {1, 3, 3, 513, 1024},  // several blocks each way
  };
  const uint64_t seed = fresh_seed();
  int ran = 0;
  for (DType dt : {DType::bf16, DType::f16})
    for (int d : {64, 128, 256})
      for (const Case& c : cases)
        for (bool causal : {false, true}) {
          AttnProblem p;
          p.batch = c.batch;
          p.heads = c.heads;
          p.heads_kv = c.heads_kv;
          p.seqlen_q = c.seqlen_q;
          p.seqlen_k = c.seqlen_k;
          p.head_dim = d;
          p.causal = causal;
          p.dtype = dt;
          ran += check_problem(*ex, p, Distribution::normal, seed + ran);
        }
  EXPECT_GT(ran, 0) << "no cuda variant ran: was the build made with FA_BENCH_CUDA=ON and kernels?";
}

TEST(GpuKernels, AdversarialScoresStayFinite) {
  SKIP_WITHOUT_CUDA(ex);
  const uint64_t seed = fresh_seed();
  for (int d : {64, 128}) {
    AttnProblem p;
    p.batch = 1;
    p.heads = 2;
    p.heads_kv = 1;
    p.seqlen_q = 300;
    p.seqlen_k = 700;
    p.head_dim = d;
    p.causal = d == 128;
    p.dtype = DType::bf16;
    check_problem(*ex, p, Distribution::adversarial, seed + d);
  }
}

TEST(GpuExecutor, PoisonShowsUnwrittenOutputs) {
  SKIP_WITHOUT_CUDA(ex);
  AttnProblem p;
  p.seqlen_q = p.seqlen_k = 16;
  ex->prepare(p, generate_inputs(p, Distribution::normal, 1));
  ex->poison_outputs();
  ex->run_once([](RunContext&) {});  // a "kernel" that writes nothing
  const HostOutputs out = ex->fetch_outputs();
  EXPECT_TRUE(std::all_of(out.o.begin(), out.o.end(), [](float x) { return std::isnan(x); }));
  EXPECT_TRUE(std::all_of(out.lse.begin(), out.lse.end(), [](float x) { return std::isnan(x); }));
}

TEST(GpuExecutor, TimingFlushesL2AndHonoursTheSampleBounds) {
  SKIP_WITHOUT_CUDA(ex);
  AttnProblem p;
  p.seqlen_q = p.seqlen_k = 256;
  ex->prepare(p, generate_inputs(p, Distribution::normal, 2));
  const KernelVariant* v = nullptr;
  for (const KernelVariant* c : cuda_variants())
    if (c->supports(p).ok && (!v || c->default_tile)) v = c;
  if (!v) GTEST_SKIP() << "no cuda variant supports " << p.describe();
  ex->reserve_workspace(v->workspace_bytes ? v->workspace_bytes(p) : 0);
  const AttnParams params = ex->params();
  TimingOptions opt;
  opt.min_samples = 12;
  opt.max_samples = 12;
  const TimingSummary t = ex->time([&](RunContext& ctx) { v->run(params, ctx); }, opt);
  EXPECT_EQ(t.samples, 12);
  EXPECT_GT(t.median_ms, 0);
  EXPECT_LE(t.min_ms, t.median_ms);
  EXPECT_NE(t.method.find("L2 flushed"), std::string::npos) << t.method;
}

TEST(GpuExecutor, OutOfMemoryIsReportedNotFatal) {
  SKIP_WITHOUT_CUDA(ex);
  AttnProblem p;
  ex->prepare(p, generate_inputs(p, Distribution::normal, 3));
  EXPECT_THROW(ex->reserve_workspace(int64_t(1) << 50), OutOfMemory);  // 1 PiB
  EXPECT_NO_THROW(ex->reserve_workspace(1 << 20));  // the device still works
}

}  // namespace
}  // namespace fa
