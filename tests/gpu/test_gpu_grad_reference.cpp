// The GPU float64 reference gradients against the Eigen ones (the oracle):
// every row and column and sampled ones, several row blocks per head, the
// shapes of the forward's tests (causal, GQA, MQA, seqlen_q != seqlen_k both
// ways, rows that see no key, head_dim 64 to 256); a planted fault they must
// catch; and a backward kernel's figures under both references. Skipped (not
// passed) without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "check/error_accumulator.h"
#include "check/inputs.h"
#include "check/reference_cross_check.h"
#include "check/sampling.h"
#include "check/validate.h"
#include "gpu_reference_cases.h"
#include "measure/executor.h"
#include "reference/gpu_reference.h"
#include "registry/kernel.h"

namespace fa {
namespace {

using gpu_reference_cases::shape;
using gpu_reference_cases::shapes;

HostInputs with_dout(const AttnProblem& p, Distribution d, uint64_t seed) {
  HostInputs in = generate_inputs(p, d, seed);
  in.dout = generate_dout(p, d, seed);
  return in;
}

DeviceInputs on_device(Executor& ex) {
  const AttnParams a = ex.params();
  return DeviceInputs{a.q, a.k, a.v, a.dout};
}

// 7 rows per block (S and dP: 16 bytes per key): blocks that divide neither
// seqlen nor a row sample.
GpuReferenceOptions small_blocks(const AttnProblem& p) {
  GpuReferenceOptions o;
  o.workspace_bytes = 7 * 16 * int64_t(p.seqlen_k);
  return o;
}

TEST(GpuGradReference, AgreesWithEigenOnEveryRowAndColumn) {
  SKIP_WITHOUT_CUDA(ex);
  for (Distribution dist : {Distribution::normal, Distribution::adversarial})
    for (const AttnProblem& p : shapes()) {
      const HostInputs in = with_dout(p, dist, 17);
      ex->prepare(p, in);
      for (const GpuReferenceOptions& opt : {GpuReferenceOptions{}, small_blocks(p)}) {
        const GradCrossCheck c = cross_check_gradients(p, in, on_device(*ex), {}, {}, opt);
        EXPECT_EQ(c.rows, p.seqlen_q);
        EXPECT_EQ(c.cols, p.seqlen_k);
        EXPECT_TRUE(c.passes()) << p.describe() << " (" << to_string(dist) << ", workspace " << opt.workspace_bytes
                                << "): " << c.describe();
      }
    }
}

TEST(GpuGradReference, AgreesWithEigenOnSampledRowsAndColumns) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : shapes()) {
    const HostInputs in = with_dout(p, Distribution::normal, 5);
    ex->prepare(p, in);
    const std::vector<int64_t> rows = sample_rows(p, std::min(p.seqlen_q, 37), 16, 5);
    const std::vector<int64_t> cols = sample_cols(p, std::min(p.seqlen_k, 29), 16, 5);
    const GradCrossCheck c = cross_check_gradients(p, in, on_device(*ex), rows, cols, small_blocks(p));
    EXPECT_EQ(c.rows, int64_t(rows.size()));
    EXPECT_EQ(c.cols, int64_t(cols.size()));
    EXPECT_TRUE(c.passes()) << p.describe() << ": " << c.describe();
  }
}

// Rows that see no key have dQ exactly 0, as the host reference has them; the
// rows that see one do not.
TEST(GpuGradReference, RowsThatSeeNoKey) {
  SKIP_WITHOUT_CUDA(ex);
  const AttnProblem p = shape(1, 2, 1, 300, 100, 64, true);  // rows 0-199 see no key
  const HostInputs in = with_dout(p, Distribution::normal, 3);
  ex->prepare(p, in);
  const SampledGrads g = reference_backward_gpu(p, on_device(*ex), {0, 199, 200, 299}, {0, 99});
  const int64_t hd = int64_t(p.heads) * p.head_dim;
  double seeing = 0;
  for (int64_t e = 0; e < hd; ++e) {
    EXPECT_EQ(g.dq[size_t(0 * hd + e)], 0.0);
    EXPECT_EQ(g.dq[size_t(1 * hd + e)], 0.0);
    seeing += std::abs(g.dq[size_t(2 * hd + e)]) + std::abs(g.dq[size_t(3 * hd + e)]);
  }
  EXPECT_GT(seeing, 0.0);
}

// The cross-check is worth something only if it fails on a wrong reference.
TEST(GpuGradReference, CrossCheckCatchesPlantedMaskOffset) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : {shape(1, 2, 2, 128, 128, 64, true), shape(1, 2, 1, 300, 100, 128, true),
                               shape(1, 4, 1, 100, 300, 256, true, DType::f16)}) {
    const HostInputs in = with_dout(p, Distribution::normal, 11);
    ex->prepare(p, in);
    GpuReferenceOptions planted = small_blocks(p);
    planted.fault = GpuReferenceFault::mask_offset;
    const GradCrossCheck c = cross_check_gradients(p, in, on_device(*ex), sample_rows(p, 64, 128, 11),
                                                   sample_cols(p, 64, 128, 11), planted);
    EXPECT_FALSE(c.passes()) << p.describe() << ": the planted mask offset went unseen: " << c.describe();
  }
}

// How far two references of one tensor are apart, in the figures' own terms:
// the GPU one measured against the host one as a kernel's output would be.
ErrorAccumulator gap(const std::vector<double>& g, const std::vector<double>& e) {
  ErrorAccumulator acc;
  for (size_t i = 0; i < e.size(); ++i) acc.add(g[i], e[i]);
  return acc;
}

// A backward kernel's figures over every row and column: the GPU path
// (check_point with the device inputs: references, standard and comparison on
// the device) against the host path (the Eigen reference, the host standard),
// the verdicts exactly, for the standard backward. A figure moves by at most
// what the two references are apart (triangle inequality; twice that, for the
// figure's own denominator moving too), and they are apart by float64 rounding
// only: the gap must lie within gradient_agreement. The tolerances come from
// two standards that sum in other orders (cuBLAS, Eigen): within a factor 1.5,
// as the forward's.
TEST(GpuGradReference, BackwardFiguresMatchTheHostReference) {
  SKIP_WITHOUT_CUDA(ex);
  int points = 0;
  for (const AttnProblem& p : shapes()) {
    bool compared = false;
    const HostInputs in = with_dout(p, Distribution::normal, 29);
    ex->prepare(p, in);
    const DeviceInputs dev = on_device(*ex);
    const PointCheck gpu = check_point(p, in, INT64_MAX, 0, 29, 0, 0, &dev);
    const PointCheck host = check_point(p, in, INT64_MAX, 0, 29, 0, 0);
    ASSERT_TRUE(gpu.device_grads && gpu.device_ref && host.grads) << p.describe();
    EXPECT_FALSE(gpu.grads.has_value()) << p.describe();
    const SampledGrads gpu_grads = gpu.device_grads->to_host(p);
    const double agreement = gradient_agreement(p, in);
    const ErrorAccumulator gaps[] = {gap(gpu_grads.dq, host.grads->dq), gap(gpu_grads.dk, host.grads->dk),
                                     gap(gpu_grads.dv, host.grads->dv)};
    for (const ErrorAccumulator& g : gaps) EXPECT_LE(g.max_rel, agreement) << p.describe();
    for (const KernelVariant& v : Registry::instance().all()) {
      // The standard backward (cuBLAS GEMMs, no atomics) gives the same bits on
      // both runs, so the figures differ by the references alone; the flash
      // backwards add dQ with float32 atomics, whose order moves the last bits.
      if (v.backend != Backend::cuda || v.pass != Pass::bwd || v.family != Family::standard || !v.supports(p).ok)
        continue;
      const KernelVariant* partner = Registry::instance().find(v.fwd_partner);
      if (!partner || !partner->supports(p).ok) continue;
      GradTolerances tol_gpu, tol_host;
      const BackwardCheck bg{partner, nullptr, &tol_gpu, 0, &dev}, bh{partner, &in, &tol_host, 0};
      const Validation a = validate_variant(v, p, *ex, gpu, 29, {}, &bg);
      const Validation b = validate_variant(v, p, *ex, host, 29, {}, &bh);
      const std::string at = v.name + " on " + p.describe();
      ASSERT_TRUE(a.grad_errors && b.grad_errors) << at << ": " << a.why << " / " << b.why;
      EXPECT_FALSE(a.grad_errors->sampled) << at;
      EXPECT_EQ(a.grad_errors->rows_checked, p.seqlen_q) << at;
      EXPECT_EQ(a.grad_errors->cols_checked, p.seqlen_k) << at;
      for (auto [x, y, g, name] : {std::tuple{a.grad_errors->dq, b.grad_errors->dq, gaps[0], "dQ"},
                                   {a.grad_errors->dk, b.grad_errors->dk, gaps[1], "dK"},
                                   {a.grad_errors->dv, b.grad_errors->dv, gaps[2], "dV"}}) {
        EXPECT_EQ(x.nonfinite, y.nonfinite) << at << ": " << name;
        EXPECT_NEAR(x.max_abs, y.max_abs, g.max_abs + 1e-15) << at << ": " << name << " max_abs";
        EXPECT_NEAR(x.max_rel, y.max_rel, 2 * g.max_rel * (1 + y.max_rel) + 1e-15) << at << ": " << name << " max_rel";
        EXPECT_NEAR(x.rel_l2, y.rel_l2, 2 * g.rel_l2() * (1 + y.rel_l2) + 1e-15) << at << ": " << name << " rel_l2";
        EXPECT_LE(x.tolerance, 1.5 * y.tolerance) << at << ": " << name << " tolerance";
        EXPECT_GE(x.tolerance, y.tolerance / 1.5) << at << ": " << name << " tolerance";
      }
      EXPECT_EQ(a.passed, b.passed) << at << ": " << a.why << " / " << b.why;
      compared = true;
    }
    points += compared ? 1 : 0;
  }
  if (points == 0) GTEST_SKIP() << "no shape has the standard cuda backward in this build";
}

}  // namespace
}  // namespace fa
