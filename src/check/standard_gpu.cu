// The standard in the kernel's precision on the device, per (batch, kv head)
// and query head, per block of rows (the float64 reference's layout and
// cuBLAS conventions, reference/gpu_forward.cu):
//   S^T = K Q_b^T (SGEMM), s = round(S * scale), P = round(exp(s - m) / l),
//   O_b^T = V^T P^T (SGEMM), O = round(O_b), LSE = m + log l in float32.
#include "check/standard_gpu.h"

#include <cmath>

#include "check/device_compare.h"
#include "check/stored_softmax.cuh"
#include "reference/gpu_rows.cuh"

namespace fa {
namespace {

using namespace gpurows;

constexpr int kThreads = 256;
constexpr int64_t kWorkspaceBytes = int64_t(256) << 20;  // S of one block of rows

// One block per row of S ([rows, ld] row-major): the row's first seen[r]
// entries become P (check/stored_softmax.cuh), the rest 0; lse[r] = m + log l
// (-inf when it sees none).
__global__ void standard_softmax_rows(float* s, int64_t ld, const int64_t* seen, float scale, bool bf16, float* lse) {
  __shared__ float shm[32];
  const int64_t r = blockIdx.x, n = seen[r];
  float* row = s + r * ld;
  for (int64_t j = n + threadIdx.x; j < ld; j += blockDim.x) row[j] = 0.f;
  if (n == 0) {
    if (threadIdx.x == 0) lse[r] = -INFINITY;
    return;
  }
  const StoredSoftmax sm = stored_softmax_row(row, n, scale, bf16, shm);
  if (threadIdx.x == 0) lse[r] = sm.m + logf(sm.l);
}

// out row r (row stride out_stride) = o[r] rounded to the dtype, for r < n.
__global__ void round_rows(const float* o, int d, int64_t n, bool bf16, float* out, int64_t out_stride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * d; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, e = i % d;
    out[r * out_stride + e] = round_stored(o[i], bf16);
  }
}

// The standard's O (rounded to the dtype, held in float32) and LSE on `rows`, on the device.
struct StandardOnDevice {
  DeviceArray<float> o, lse;  // [batch, rows, heads, head_dim], [batch, heads, rows]
};

StandardOnDevice run_standard(const AttnProblem& p, const DeviceInputs& in, const std::vector<int64_t>& rows) {
  const int64_t n_rows = int64_t(rows.size()), d = p.head_dim, nq = p.seqlen_q, nk = p.seqlen_k;
  const int64_t o_elems = int64_t(p.batch) * n_rows * p.heads * d, lse_elems = int64_t(p.batch) * p.heads * n_rows;
  StandardOnDevice out{device_array<float>(o_elems, "cudaMalloc (standard O)"),
                       device_array<float>(lse_elems, "cudaMalloc (standard LSE)")};
  if (n_rows == 0) return out;
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    throw KernelError("standard_forward_gpu: the device holds bf16 or fp16 tensors");
  std::vector<int64_t> seen(static_cast<size_t>(n_rows));
  for (int64_t i = 0; i < n_rows; ++i) seen[size_t(i)] = p.keys_seen(rows[size_t(i)]);
  const int64_t max_vis = std::max<int64_t>(seen.back(), 1);
  const int64_t block = std::clamp<int64_t>(kWorkspaceBytes / (int64_t(sizeof(float)) * max_vis), 1, n_rows);
  const int group = p.heads / p.heads_kv;
  const bool bf16 = p.dtype == DType::bf16;

  Gemm gemm;
  const cudaStream_t st = gemm.stream();
  auto rows_d = device_array<int64_t>(n_rows, "cudaMalloc (standard rows)");
  auto seen_d = device_array<int64_t>(n_rows, "cudaMalloc (standard visible keys)");
  auto kf = device_array<float>(nk * d, "cudaMalloc (standard K)");
  auto vf = device_array<float>(nk * d, "cudaMalloc (standard V)");
  auto qb = device_array<float>(block * d, "cudaMalloc (standard Q block)");
  auto s = device_array<float>(block * max_vis, "cudaMalloc (standard S block)");
  auto ob = device_array<float>(block * d, "cudaMalloc (standard O block)");
  float* o = out.o.get();
  float* lse = out.lse.get();
  check_cuda(cudaMemcpyAsync(rows_d.get(), rows.data(), size_t(n_rows) * 8, cudaMemcpyHostToDevice, st),
             "cudaMemcpy (standard rows)");
  check_cuda(cudaMemcpyAsync(seen_d.get(), seen.data(), size_t(n_rows) * 8, cudaMemcpyHostToDevice, st),
             "cudaMemcpy (standard visible keys)");
  check_cuda(cudaMemsetAsync(o, 0, size_t(o_elems) * sizeof(float), st), "cudaMemset (standard O)");

  const float scale = p.scale(), one = 1.f, zero = 0.f;
  for (int b = 0; b < p.batch; ++b)
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      load_head(in.k, p.dtype, nk, p.heads_kv, int(d), b, hk, nullptr, nk, 1.f, kf.get(), st);
      load_head(in.v, p.dtype, nk, p.heads_kv, int(d), b, hk, nullptr, nk, 1.f, vf.get(), st);
      for (int h = hk * group; h < (hk + 1) * group; ++h)
        for (int64_t r0 = 0; r0 < n_rows; r0 += block) {
          const int64_t n = std::min(block, n_rows - r0);
          const int64_t n_vis = seen[size_t(r0 + n - 1)];
          load_head(in.q, p.dtype, nq, p.heads, int(d), b, h, rows_d.get() + r0, n, 1.f, qb.get(), st);
          if (n_vis > 0)  // S^T [n_vis, n] = K[:n_vis] x Q_b^T, unscaled like the host standard's GEMM
            check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_T, CUBLAS_OP_N, int(n_vis), int(n), int(d), &one, kf.get(),
                                     int(d), qb.get(), int(d), &zero, s.get(), int(n_vis)),
                         "cublasSgemm (standard S)");
          float* lse_rows = lse + (int64_t(b) * p.heads + h) * n_rows + r0;
          standard_softmax_rows<<<int(n), kThreads, 0, st>>>(s.get(), n_vis, seen_d.get() + r0, scale, bf16, lse_rows);
          check_cuda(cudaGetLastError(), "standard_softmax_rows launch");
          if (n_vis == 0) continue;
          check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_N, int(d), int(n), int(n_vis), &one, vf.get(),
                                   int(d), s.get(), int(n_vis), &zero, ob.get(), int(d)),
                       "cublasSgemm (standard O)");
          float* o_rows = o + ((int64_t(b) * n_rows + r0) * p.heads + h) * d;
          round_rows<<<grid_for(n * d, kThreads), kThreads, 0, st>>>(ob.get(), int(d), n, bf16, o_rows,
                                                                     int64_t(p.heads) * d);
          check_cuda(cudaGetLastError(), "round_rows launch");
        }
    }
  gemm.sync();
  return out;
}

}  // namespace

StandardRows standard_forward_gpu(const AttnProblem& p, const DeviceInputs& in, const std::vector<int64_t>& rows) {
  const StandardOnDevice dev = run_standard(p, in, rows);
  StandardRows out;
  out.rows = rows;
  out.o.resize(size_t(p.batch) * rows.size() * p.heads * p.head_dim);
  out.lse.resize(size_t(p.batch) * p.heads * rows.size());
  if (!out.o.empty())
    check_cuda(cudaMemcpy(out.o.data(), dev.o.get(), out.o.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy (standard O back)");
  if (!out.lse.empty())
    check_cuda(cudaMemcpy(out.lse.data(), dev.lse.get(), out.lse.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy (standard LSE back)");
  return out;
}

ErrorMetrics standard_errors_gpu(const AttnProblem& p, const DeviceInputs& in, const DeviceReference& ref) {
  const StandardOnDevice dev = run_standard(p, in, ref.rows());
  return compare_outputs_gpu(p, DeviceOutputs{dev.o.get(), dev.lse.get(), DType::f32, int64_t(ref.rows().size())},
                             ref);
}

}  // namespace fa
