// The cuda back end's device-side steps against their host counterparts:
// inputs made on the device are the host generator's, bit for bit, for every
// distribution, dtype and a shape spanning many chunks; error figures
// computed on the device are compare_outputs' on the host (every row, sampled
// rows, rows that see no key, planted NaN and wrong LSE), and so are the
// standard's figures the tolerance rule takes; gradient figures computed on
// the device are compare_grads' (every row and column, sampled ones, a planted
// NaN, a planted wrong value); a device snapshot sees one changed byte.
// Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(FA_BENCH_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

#include "check/device_compare.h"
#include "check/grad_metrics.h"
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

void expect_same_tensor(const TensorErrors& gpu, const TensorErrors& host, const std::string& what) {
  auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  EXPECT_TRUE(same(gpu.max_abs, host.max_abs)) << what << ": max abs " << gpu.max_abs << " vs " << host.max_abs;
  EXPECT_TRUE(same(gpu.max_rel, host.max_rel)) << what << ": max rel " << gpu.max_rel << " vs " << host.max_rel;
  // Sums in another order: equal to rounding.
  EXPECT_NEAR(gpu.rel_l2, host.rel_l2, 1e-9 * std::abs(host.rel_l2)) << what << ": rel L2";
  EXPECT_EQ(gpu.nonfinite, host.nonfinite) << what;
  EXPECT_EQ(gpu.tolerance, 0.0) << what;
}

#if defined(FA_BENCH_HAVE_CUDA)
// max |r| over the compared values, NaN if one is: what the floors scale by.
double max_abs_of(const std::vector<double>& r) {
  double m = 0;
  for (double x : r) m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, std::abs(x));
  return m;
}

// x's values rounded to the dtype, uploaded as its 16-bit bits.
void upload_16bit(void* dst, const std::vector<float>& x, DType t) {
  std::vector<uint16_t> bits(x.size());
  for (size_t i = 0; i < x.size(); ++i) bits[i] = t == DType::bf16 ? float_to_bf16_bits(x[i]) : float_to_f16_bits(x[i]);
  EXPECT_EQ(cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

// "Kernel" gradients: the reference's values times 1.001 on its rows (dQ) or
// columns (dK, dV), 0.25 elsewhere, in the dtype.
std::vector<float> perturbed(const std::vector<double>& ref, const std::vector<int64_t>& idx, int64_t batch,
                             int64_t seqlen, int64_t hd, DType t) {
  std::vector<float> x(size_t(batch * seqlen * hd), 0.25f);
  const int64_t n = int64_t(idx.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t e = 0; e < hd; ++e) {
        const float v = float(ref[size_t((b * n + k) * hd + e)] * 1.001);
        x[size_t((b * seqlen + idx[size_t(k)]) * hd + e)] = t == DType::bf16 ? round_bf16(v) : round_f16(v);
      }
  return x;
}
#endif

TEST(GpuCompare, GradFiguresEqualTheHostComparison) {
  SKIP_WITHOUT_CUDA(ex);
#if defined(FA_BENCH_HAVE_CUDA)
  // GQA causal; q300 k100 causal (rows 0-199 see no key: dQ 0); fp16 MQA ragged the other way.
  for (const AttnProblem& p : {shape(2, 4, 2, 300, 300, 64, true), shape(1, 2, 1, 300, 100, 128, true),
                               shape(1, 4, 1, 100, 257, 64, true, DType::f16)}) {
    HostInputs in = generate_inputs(p, Distribution::normal, 13);
    in.dout = generate_dout(p, Distribution::normal, 13);
    ex->prepare(p, in);
    const AttnParams a = ex->params();
    const DeviceInputs dev{a.q, a.k, a.v, a.dout};
    for (const bool sample : {false, true}) {
      std::vector<int64_t> rows, cols;
      if (sample) {
        rows = sample_rows(p, 50, 16, 13);
        cols = sample_cols(p, 40, 16, 13);
      }
      const DeviceGrads ref = reference_backward_gpu_on_device(p, dev, rows, cols);
      const SampledGrads host_ref = ref.to_host(p);
      const int64_t q_hd = int64_t(p.heads) * p.head_dim, kv_hd = int64_t(p.heads_kv) * p.head_dim;
      HostGrads g;
      g.dq = perturbed(host_ref.dq, host_ref.rows, p.batch, p.seqlen_q, q_hd, p.dtype);
      g.dk = perturbed(host_ref.dk, host_ref.cols, p.batch, p.seqlen_k, kv_hd, p.dtype);
      g.dv = perturbed(host_ref.dv, host_ref.cols, p.batch, p.seqlen_k, kv_hd, p.dtype);
      for (int plant = 0; plant < 3; ++plant) {
        HostGrads x = g;
        if (plant == 1) x.dk[size_t(host_ref.cols.back() * kv_hd + 5)] = NAN;           // a non-finite value
        if (plant == 2) x.dq[size_t(host_ref.rows.back() * q_hd + 7)] += 0.5f;          // a wrong value
        upload_16bit(a.dq, x.dq, p.dtype);
        upload_16bit(a.dk, x.dk, p.dtype);
        upload_16bit(a.dv, x.dv, p.dtype);
        const GradComparison gpu = compare_grads_gpu(p, DeviceGradOutputs{a.dq, a.dk, a.dv, p.dtype}, ref);
        const GradErrors host = compare_grads(p, ex->fetch_grads(), host_ref);
        const std::string what = p.describe() + (sample ? " sampled" : " every row") + " plant " + std::to_string(plant);
        expect_same_tensor(gpu.errors.dq, host.dq, what + " dQ");
        expect_same_tensor(gpu.errors.dk, host.dk, what + " dK");
        expect_same_tensor(gpu.errors.dv, host.dv, what + " dV");
        EXPECT_EQ(gpu.errors.rows_checked, host.rows_checked) << what;
        EXPECT_EQ(gpu.errors.cols_checked, host.cols_checked) << what;
        EXPECT_EQ(gpu.errors.sampled, host.sampled) << what;
        EXPECT_EQ(gpu.errors.sampled, sample) << what;
        EXPECT_EQ(gpu.dq_ref_max_abs, max_abs_of(host_ref.dq)) << what;
        EXPECT_EQ(gpu.dk_ref_max_abs, max_abs_of(host_ref.dk)) << what;
        EXPECT_EQ(gpu.dv_ref_max_abs, max_abs_of(host_ref.dv)) << what;
        if (plant == 1) {
          EXPECT_EQ(gpu.errors.dk.nonfinite, 1) << what;
        }
        if (plant == 2) {
          EXPECT_GT(gpu.errors.dq.max_abs, 0.4) << what;
        }
      }
    }
  }
#endif
}

// O and LSE of a backward are compared with what its partner left on the
// device: the snapshot must see a single changed byte, in the words and in
// the tail past them.
TEST(GpuCompare, SnapshotSeesOneChangedByte) {
  SKIP_WITHOUT_CUDA(ex);
#if defined(FA_BENCH_HAVE_CUDA)
  const size_t bytes = 4 * 1000 + 3;
  DeviceFloats buf(bytes / 4 + 1);
  std::vector<unsigned char> host(bytes);
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7 + 1);
  ASSERT_EQ(cudaMemcpy(buf.p, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  const DeviceSnapshot snap(buf.p, bytes);
  EXPECT_TRUE(snap.same_bits(buf.p));
  for (size_t at : {size_t(0), size_t(2001), bytes - 1}) {
    unsigned char flipped = host[at] ^ 0x10;
    auto* byte = static_cast<unsigned char*>(buf.p) + at;
    ASSERT_EQ(cudaMemcpy(byte, &flipped, 1, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_FALSE(snap.same_bits(buf.p)) << "byte " << at;
    ASSERT_EQ(cudaMemcpy(byte, &host[at], 1, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_TRUE(snap.same_bits(buf.p)) << "byte " << at;
  }
#endif
}

}  // namespace
}  // namespace fa
