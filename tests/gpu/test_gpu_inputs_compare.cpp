// The cuda back end's device-side steps against their host counterparts:
// inputs made on the device are the host generator's, bit for bit, for every
// distribution, dtype and a shape spanning many chunks; error figures
// computed on the device are compare_outputs' on the host (every row, sampled
// rows, rows that see no key, planted NaN and wrong LSE), and so are the
// standard's figures the tolerance rule takes. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(FA_BENCH_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

#include "check/device_compare.h"
#include "check/half.h"
#include "check/inputs.h"
#include "check/inputs_gpu.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "check/standard_gpu.h"
#include "gpu_reference_cases.h"
#include "measure/executor.h"
#include "reference/gpu_reference.h"

namespace fa {
namespace {

using gpu_reference_cases::shape;

#if defined(FA_BENCH_HAVE_CUDA)
// The 16-bit values of a device buffer, as float.
std::vector<float> download(const void* src, size_t n, DType t) {
  std::vector<uint16_t> bits(n);
  EXPECT_EQ(cudaMemcpy(bits.data(), src, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = t == DType::bf16 ? bf16_bits_to_float(bits[i]) : f16_bits_to_float(bits[i]);
  return out;
}

void upload_float(void* dst, const std::vector<float>& x) {
  EXPECT_EQ(cudaMemcpy(dst, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
}

struct DeviceFloats {
  explicit DeviceFloats(size_t n) { EXPECT_EQ(cudaMalloc(&p, n * 4), cudaSuccess); }
  ~DeviceFloats() { cudaFree(p); }
  void* p = nullptr;
};

// How many values differ in their bits (0 expected).
int64_t differing(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return -1;
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], 4) != 0;
  return n;
}
#endif

TEST(GpuInputs, TheHostGeneratorsValuesBitForBit) {
  SKIP_WITHOUT_CUDA(ex);
#if defined(FA_BENCH_HAVE_CUDA)
  // GQA with ragged lengths; one of 8.4M values per tensor (129 chunks); hd256 fp16.
  const std::vector<AttnProblem> problems = {shape(2, 4, 2, 300, 700, 64, true),
                                             shape(1, 32, 8, 2048, 2048, 128, false),
                                             shape(1, 2, 1, 513, 1000, 256, true, DType::f16)};
  for (Distribution dist : {Distribution::normal, Distribution::uniform, Distribution::adversarial,
                            Distribution::outliers})
    for (const AttnProblem& p : problems) {
      const uint64_t seed = 4242;
      HostInputs host = generate_inputs(p, dist, seed);
      host.dout = generate_dout(p, dist, seed);
      const Executor::InputBuffers b = ex->allocate(p, true);
      generate_inputs_gpu(p, dist, seed, InputTargets{b.q, b.k, b.v, b.dout});
      const std::string what = p.describe() + " " + std::string(to_string(dist));
      EXPECT_EQ(differing(download(b.q, host.q.size(), p.dtype), host.q), 0) << "Q of " << what;
      EXPECT_EQ(differing(download(b.k, host.k.size(), p.dtype), host.k), 0) << "K of " << what;
      EXPECT_EQ(differing(download(b.v, host.v.size(), p.dtype), host.v), 0) << "V of " << what;
      EXPECT_EQ(differing(download(b.dout, host.dout.size(), p.dtype), host.dout), 0) << "dO of " << what;
    }
  // Another seed gives other values (the seed reaches the device streams).
  const AttnProblem p = problems[0];
  const Executor::InputBuffers b = ex->allocate(p, false);
  generate_inputs_gpu(p, Distribution::normal, 1, InputTargets{b.q, b.k, b.v});
  EXPECT_GT(differing(download(b.q, size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim, p.dtype),
                      generate_inputs(p, Distribution::normal, 2).q),
            0);
#endif
}

void expect_same_figures(const ErrorMetrics& gpu, const ErrorMetrics& host, const std::string& what) {
  auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  auto close = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-9 * std::abs(b); };
  EXPECT_TRUE(same(gpu.o_max_abs, host.o_max_abs)) << what << ": O max abs " << gpu.o_max_abs << " vs " << host.o_max_abs;
  EXPECT_TRUE(same(gpu.o_max_rel, host.o_max_rel)) << what << ": O max rel " << gpu.o_max_rel << " vs " << host.o_max_rel;
  EXPECT_TRUE(same(gpu.lse_max_abs, host.lse_max_abs)) << what << ": LSE max abs " << gpu.lse_max_abs << " vs "
                                                       << host.lse_max_abs;
  EXPECT_TRUE(same(gpu.lse_max_rel, host.lse_max_rel)) << what;
  // Sums in another order: equal to rounding.
  EXPECT_TRUE(close(gpu.o_rel_l2, host.o_rel_l2)) << what << ": O rel L2 " << gpu.o_rel_l2 << " vs " << host.o_rel_l2;
  EXPECT_TRUE(close(gpu.lse_rel_l2, host.lse_rel_l2)) << what;
  EXPECT_EQ(gpu.nonfinite, host.nonfinite) << what;
  EXPECT_EQ(gpu.rows_checked, host.rows_checked) << what;
  EXPECT_EQ(gpu.sampled, host.sampled) << what;
}

TEST(GpuCompare, FiguresEqualTheHostComparison) {
  SKIP_WITHOUT_CUDA(ex);
#if defined(FA_BENCH_HAVE_CUDA)
  // q300 k100 causal: rows 0-199 see no key (LSE -inf).
  for (const AttnProblem& p : {shape(2, 4, 2, 300, 300, 64, true), shape(1, 2, 1, 300, 100, 128, true),
                               shape(1, 2, 2, 513, 513, 256, true, DType::f16)}) {
    const HostInputs in = generate_inputs(p, Distribution::normal, 9);
    ex->prepare(p, in);
    const AttnParams a = ex->params();
    const DeviceInputs dev{a.q, a.k, a.v};
    for (const bool sample : {false, true}) {
      std::vector<int64_t> rows;
      if (sample) rows = sample_rows(p, 50, 16, 9);
      const DeviceReference ref = reference_forward_gpu_on_device(p, dev, rows);
      const ReferenceOutputs host_ref = ref.to_host(p);
      // "Kernel" outputs: the reference itself, perturbed, in the dtype and float32 LSE.
      const size_t n_o = size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
      const size_t n_lse = size_t(p.batch) * p.heads * p.seqlen_q;
      HostOutputs out;
      out.o.assign(n_o, 0.25f);
      out.lse.assign(n_lse, 1.5f);
      for (size_t ri = 0; ri < host_ref.rows.size(); ++ri)
        for (int64_t b = 0; b < p.batch; ++b)
          for (int64_t h = 0; h < p.heads; ++h) {
            const int64_t row = host_ref.rows[ri];
            for (int64_t e = 0; e < p.head_dim; ++e) {
              const double r = host_ref.o[((b * int64_t(host_ref.rows.size()) + int64_t(ri)) * p.heads + h) * p.head_dim + e];
              float& o = out.o[((b * p.seqlen_q + row) * p.heads + h) * p.head_dim + e];
              o = p.dtype == DType::bf16 ? round_bf16(float(r * 1.001)) : round_f16(float(r * 1.001));
            }
            out.lse[(b * p.heads + h) * p.seqlen_q + row] =
                float(host_ref.lse[(b * p.heads + h) * int64_t(host_ref.rows.size()) + int64_t(ri)]);
          }
      for (int plant = 0; plant < 3; ++plant) {
        HostOutputs o = out;
        const int64_t row = host_ref.rows.back();
        if (plant == 1) o.o[(row * p.heads) * p.head_dim + 3] = NAN;  // a non-finite output value
        if (plant == 2) o.lse[0] = 2.0f;  // row 0 of batch 0 head 0: sees no key when causal and q > k
        std::vector<uint16_t> bits(n_o);
        for (size_t i = 0; i < n_o; ++i) bits[i] = p.dtype == DType::bf16 ? float_to_bf16_bits(o.o[i]) : float_to_f16_bits(o.o[i]);
        EXPECT_EQ(cudaMemcpy(a.o, bits.data(), n_o * 2, cudaMemcpyHostToDevice), cudaSuccess);
        upload_float(a.lse, o.lse);
        const ErrorMetrics gpu =
            compare_outputs_gpu(p, DeviceOutputs{a.o, a.lse, p.dtype, p.seqlen_q, ref.rows_on_device()}, ref);
        expect_same_figures(gpu, compare_outputs(p, ex->fetch_outputs(), host_ref),
                            p.describe() + (sample ? " sampled" : " every row") + " plant " + std::to_string(plant));
      }
      // The standard's figures, on the device and from its rows on the host.
      const Tolerances t_gpu = tolerances_for(p, standard_errors_gpu(p, dev, ref));
      const Tolerances t_host = tolerances_for(p, standard_forward_gpu(p, dev, host_ref.rows), host_ref);
      EXPECT_EQ(t_gpu.tolerance, t_host.tolerance) << p.describe();
      EXPECT_EQ(t_gpu.lse_tolerance, t_host.lse_tolerance) << p.describe();
    }
  }
#endif
}

}  // namespace
}  // namespace fa
