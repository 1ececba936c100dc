// The GPU float64 reference against the Eigen one (the oracle): every row and
// sampled rows, several row blocks per head, shapes that stress the mask and
// the head mapping; a planted fault it must catch; the tolerance rule's GPU
// standard against the host one; and a kernel's error figures under both
// references on every row. Skipped (not passed) without a CUDA device.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <tuple>
#include <string>
#include <vector>

#include "check/inputs.h"
#include "check/metrics.h"
#include "check/reference_cross_check.h"
#include "check/sampling.h"
#include "check/standard_gpu.h"
#include "check/validate.h"
#include "gpu_reference_cases.h"
#include "measure/executor.h"
#include "reference/gpu_reference.h"
#include "reference/reference.h"
#include "registry/kernel.h"

namespace fa {
namespace {

using gpu_reference_cases::shape;
using gpu_reference_cases::shapes;

DeviceInputs on_device(Executor& ex) {
  const AttnParams a = ex.params();
  return DeviceInputs{a.q, a.k, a.v};
}

// 7 rows per block: blocks that divide neither seqlen nor a row sample.
GpuReferenceOptions small_blocks(const AttnProblem& p) {
  GpuReferenceOptions o;
  o.workspace_bytes = 7 * 8 * int64_t(p.seqlen_k);
  return o;
}

TEST(GpuReference, AgreesWithEigenOnEveryRow) {
  SKIP_WITHOUT_CUDA(ex);
  for (Distribution dist : {Distribution::normal, Distribution::adversarial})
    for (const AttnProblem& p : shapes()) {
      const HostInputs in = generate_inputs(p, dist, 17);
      ex->prepare(p, in);
      for (const GpuReferenceOptions& opt : {GpuReferenceOptions{}, small_blocks(p)}) {
        const ReferenceCrossCheck c = cross_check_reference(p, in, on_device(*ex), {}, opt);
        EXPECT_EQ(c.rows, p.seqlen_q);
        EXPECT_TRUE(c.passes()) << p.describe() << " (" << to_string(dist) << ", workspace " << opt.workspace_bytes
                                << "): " << c.describe();
      }
    }
}

TEST(GpuReference, AgreesWithEigenOnSampledRows) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : shapes()) {
    const HostInputs in = generate_inputs(p, Distribution::normal, 5);
    ex->prepare(p, in);
    const std::vector<int64_t> rows = sample_rows(p, std::min(p.seqlen_q, 37), 16, 5);
    const ReferenceCrossCheck c = cross_check_reference(p, in, on_device(*ex), rows, small_blocks(p));
    EXPECT_EQ(c.rows, int64_t(rows.size()));
    EXPECT_TRUE(c.passes()) << p.describe() << ": " << c.describe();
  }
}

// Rows that see no key: O exactly 0, LSE exactly -inf, as the host reference has them.
TEST(GpuReference, RowsThatSeeNoKey) {
  SKIP_WITHOUT_CUDA(ex);
  const AttnProblem p = shape(1, 2, 1, 300, 100, 64, true);
  const HostInputs in = generate_inputs(p, Distribution::normal, 3);
  ex->prepare(p, in);
  const ReferenceOutputs g = reference_forward_gpu(p, on_device(*ex), {0, 199, 200, 299});
  for (int h = 0; h < p.heads; ++h) {
    EXPECT_TRUE(std::isinf(g.lse[size_t(h) * 4 + 0]) && g.lse[size_t(h) * 4 + 0] < 0);
    EXPECT_TRUE(std::isinf(g.lse[size_t(h) * 4 + 1]) && g.lse[size_t(h) * 4 + 1] < 0);
    EXPECT_TRUE(std::isfinite(g.lse[size_t(h) * 4 + 2]));
    for (int e = 0; e < p.head_dim; ++e) {
      EXPECT_EQ(g.o[(size_t(0) * p.heads + h) * p.head_dim + e], 0.0);
      EXPECT_EQ(g.o[(size_t(1) * p.heads + h) * p.head_dim + e], 0.0);
    }
  }
}

// The cross-check is worth something only if it fails on a wrong reference.
TEST(GpuReference, CrossCheckCatchesPlantedMaskOffset) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : {shape(1, 2, 2, 128, 128, 64, true), shape(1, 2, 1, 300, 100, 128, true)}) {
    const HostInputs in = generate_inputs(p, Distribution::normal, 11);
    ex->prepare(p, in);
    GpuReferenceOptions planted = small_blocks(p);
    planted.fault = GpuReferenceFault::mask_offset;
    const ReferenceCrossCheck c =
        cross_check_reference(p, in, on_device(*ex), sample_rows(p, 64, 128, 11), planted);
    EXPECT_FALSE(c.passes()) << p.describe() << ": the planted mask offset went unseen: " << c.describe();
  }
}

// The tolerance rule's standard on the GPU sums in another order than Eigen's,
// so its error is not bit-identical; it must be the same size.
TEST(GpuReference, StandardOnGpuGivesTheHostTolerances) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : shapes()) {
    const HostInputs in = generate_inputs(p, Distribution::normal, 23);
    ex->prepare(p, in);
    const ReferenceOutputs ref = reference_forward(p, in);
    const Tolerances host = tolerances_for(p, in, ref);
    const Tolerances gpu = tolerances_for(p, standard_forward_gpu(p, on_device(*ex), ref.rows), ref);
    const double floor = dtype_floor(p.dtype);
    EXPECT_NEAR(gpu.tolerance - floor, host.tolerance - floor, 0.5 * (host.tolerance - floor) + 1e-6)
        << p.describe() << ": O tolerance gpu " << gpu.tolerance << ", host " << host.tolerance;
    EXPECT_NEAR(gpu.lse_tolerance - 1e-3, host.lse_tolerance - 1e-3, 0.5 * (host.lse_tolerance - 1e-3) + 1e-5)
        << p.describe() << ": LSE tolerance gpu " << gpu.lse_tolerance << ", host " << host.lse_tolerance;
  }
}

// A kernel's figures over every row: the GPU path (check_point with the device
// inputs) against the host path (the Eigen reference on every row). The figures
// must agree to float64 rounding, the verdicts exactly.
TEST(GpuReference, KernelFiguresMatchTheHostReference) {
  SKIP_WITHOUT_CUDA(ex);
  int points = 0;
  for (const AttnProblem& p : shapes()) {
    bool compared = false;
    const HostInputs in = generate_inputs(p, Distribution::normal, 29);
    ex->prepare(p, in);
    const DeviceInputs dev = on_device(*ex);
    const PointCheck gpu = check_point(p, in, INT64_MAX, 0, 29, 0, std::nullopt, &dev);
    const PointCheck host = check_point(p, in, INT64_MAX, 0, 29, 0);
    for (const KernelVariant& v : Registry::instance().all()) {
      // (The standard family stores S in the dtype, which the rule does not model: test_gpu_kernels.cpp.)
      if (v.backend != Backend::cuda || v.pass != Pass::fwd || !v.default_tile || v.family == Family::standard ||
          !v.supports(p).ok)
        continue;
      ex->reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
      const Validation a = validate_variant(v, p, *ex, gpu, 29);
      ex->reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
      const Validation b = validate_variant(v, p, *ex, host, 29);
      const std::string at = v.name + " on " + p.describe();
      EXPECT_EQ(a.errors.rows_checked, p.seqlen_q) << at;
      EXPECT_FALSE(a.errors.sampled) << at;
      EXPECT_EQ(a.errors.nonfinite, b.errors.nonfinite) << at;
      for (auto [x, y, name] : {std::tuple{a.errors.o_max_abs, b.errors.o_max_abs, "o_max_abs"},
                                {a.errors.o_max_rel, b.errors.o_max_rel, "o_max_rel"},
                                {a.errors.o_rel_l2, b.errors.o_rel_l2, "o_rel_l2"},
                                {a.errors.lse_max_abs, b.errors.lse_max_abs, "lse_max_abs"},
                                {a.errors.lse_max_rel, b.errors.lse_max_rel, "lse_max_rel"}})
        EXPECT_NEAR(x, y, 1e-9 * std::abs(y) + 1e-15) << at << ": " << name;
      EXPECT_EQ(a.passed, b.passed) << at << ": " << a.why << " / " << b.why;
      EXPECT_TRUE(a.passed) << at << ": " << a.why;
      compared = true;
    }
    points += compared ? 1 : 0;
  }
  // A build with head_dim 64 and 128 kernels (the default) runs 8 of the shapes.
  if (points < 6) GTEST_SKIP() << "only " << points << " shapes have a default cuda forward kernel in this build";
}

}  // namespace
}  // namespace fa
