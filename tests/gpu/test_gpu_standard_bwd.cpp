// The gradient tolerance rule's standard backward on the GPU
// (check/standard_bwd_gpu.h) against the host one (check/standard_bwd.h):
// its values, and the tolerances each gives against the same reference, on
// causal, GQA, MQA, ragged shapes, rows that see no key, a single key,
// bf16 and fp16, on every row and column and on sampled ones. The two sum in
// other orders (cuBLAS, Eigen), so a stored value can round the other way:
// the tolerances must agree within a factor 1.5, as the forward standard's do
// (tests/gpu/test_gpu_reference.cpp). Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "check/grad_metrics.h"
#include "check/inputs.h"
#include "check/sampling.h"
#include "check/standard_bwd.h"
#include "check/standard_bwd_gpu.h"
#include "gpu_reference_cases.h"
#include "measure/executor.h"
#include "reference/gpu_reference.h"

namespace fa {
namespace {

using gpu_reference_cases::shape;

HostInputs with_dout(const AttnProblem& p, uint64_t seed) {
  HostInputs in = generate_inputs(p, Distribution::normal, seed);
  in.dout = generate_dout(p, Distribution::normal, seed);
  return in;
}

DeviceInputs on_device(Executor& ex) {
  const AttnParams a = ex.params();
  return DeviceInputs{a.q, a.k, a.v, a.dout};
}

// Causal with GQA; non-causal GQA; MQA ragged with rows that see no key
// (q300 k100: rows 0-199); ragged the other way in fp16; a single key (dQ and
// dK exactly 0); fp16 with head_dim 128; a shape long enough for many of the
// host's row chunks.
std::vector<AttnProblem> cases() {
  return {shape(2, 4, 2, 300, 300, 64, true),
          shape(1, 8, 2, 200, 200, 128, false),
          shape(1, 4, 1, 300, 100, 64, true),
          shape(1, 2, 2, 100, 300, 64, true, DType::f16),
          shape(1, 2, 1, 190, 1, 64, false),
          shape(1, 4, 2, 257, 257, 128, true, DType::f16),
          shape(1, 4, 4, 1024, 1024, 128, true)};
}

void expect_within_factor(double gpu, double host, const std::string& what) {
  EXPECT_TRUE(std::isfinite(gpu)) << what << ": " << gpu;
  EXPECT_GT(host, 0.0) << what;
  EXPECT_LE(gpu, 1.5 * host) << what << ": GPU " << gpu << " vs host " << host;
  EXPECT_GE(gpu, host / 1.5) << what << ": GPU " << gpu << " vs host " << host;
}

// The tolerances from the device standard's figures (standard_grad_errors_gpu)
// against the host standard's, with one reference (the GPU one) for both.
TEST(GpuStandardBackward, TolerancesAgreeWithTheHostStandard) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : cases()) {
    const HostInputs in = with_dout(p, 31);
    ex->prepare(p, in);
    const DeviceInputs dev = on_device(*ex);
    for (const bool sample : {false, true}) {
      std::vector<int64_t> rows, cols;
      if (sample) {
        rows = sample_rows(p, std::min(p.seqlen_q, 41), 16, 31);
        cols = sample_cols(p, std::min(p.seqlen_k, 37), 16, 31);
      }
      const DeviceGrads ref = reference_backward_gpu_on_device(p, dev, rows, cols);
      const SampledGrads ref_host = ref.to_host(p);
      GradErrors host, gpu;
      set_grad_tolerances(host, p, in, ref_host, 0);
      const GradComparison standard = standard_grad_errors_gpu(p, dev, ref);
      set_grad_tolerances(gpu, p.dtype, standard);
      const std::string at = p.describe() + (sample ? " sampled" : " every row and column");
      EXPECT_EQ(standard.errors.rows_checked, int64_t(ref_host.rows.size())) << at;
      EXPECT_EQ(standard.errors.cols_checked, int64_t(ref_host.cols.size())) << at;
      EXPECT_EQ(standard.errors.sampled, sample && (p.seqlen_q > 41 || p.seqlen_k > 37)) << at;
      EXPECT_EQ(standard.errors.dq.nonfinite + standard.errors.dk.nonfinite + standard.errors.dv.nonfinite, 0) << at;
      expect_within_factor(gpu.dq.tolerance, host.dq.tolerance, at + ": dQ");
      expect_within_factor(gpu.dk.tolerance, host.dk.tolerance, at + ": dK");
      expect_within_factor(gpu.dv.tolerance, host.dv.tolerance, at + ": dV");
    }
  }
}

// The device standard's values against the host standard's on every row and
// column: they may differ where a stored value rounded the other way, which
// moves few elements, so the two are far closer to each other than either is
// to the exact gradients. A missed rounding, scale or D term would not be.
TEST(GpuStandardBackward, ValuesAreTheHostStandardsUpToSummationOrder) {
  SKIP_WITHOUT_CUDA(ex);
  for (const AttnProblem& p : cases()) {
    const HostInputs in = with_dout(p, 37);
    ex->prepare(p, in);
    const DeviceInputs dev = on_device(*ex);
    const SampledGrads exact = reference_backward_gpu(p, dev);
    const SampledGrads host = standard_backward_in_precision(p, in, exact.rows, exact.cols, 0);
    const HostGrads gpu = standard_backward_gpu(p, dev);
    // gpu against host (as a kernel against a reference), and host against the exact gradients.
    const GradErrors apart = compare_grads(p, gpu, host);
    HostGrads host_full;  // the host standard's values in a kernel's layout (every row and column)
    host_full.dq.assign(host.dq.begin(), host.dq.end());
    host_full.dk.assign(host.dk.begin(), host.dk.end());
    host_full.dv.assign(host.dv.begin(), host.dv.end());
    const GradErrors own = compare_grads(p, host_full, exact);
    const std::string at = p.describe();
    EXPECT_EQ(apart.dq.nonfinite + apart.dk.nonfinite + apart.dv.nonfinite, 0) << at;
    const TensorErrors pairs[3][2] = {{apart.dq, own.dq}, {apart.dk, own.dk}, {apart.dv, own.dv}};
    const char* names[3] = {"dQ", "dK", "dV"};
    for (int i = 0; i < 3; ++i) {
      // A tensor whose exact gradient is 0 (a single key) is 0 in both standards.
      if (pairs[i][1].rel_l2 == 0) {
        EXPECT_EQ(pairs[i][0].max_abs, 0.0) << at << ": " << names[i];
        continue;
      }
      EXPECT_LE(pairs[i][0].rel_l2, 0.5 * pairs[i][1].rel_l2) << at << ": " << names[i] << " GPU vs host standard "
                                                              << pairs[i][0].rel_l2 << ", host standard's own error "
                                                              << pairs[i][1].rel_l2;
    }
  }
}

}  // namespace
}  // namespace fa
