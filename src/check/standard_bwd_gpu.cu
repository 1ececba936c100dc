// The standard backward in the dtype on the device. Per (batch, kv head) K and
// V become float [seqlen_k, d] and the group's sums gK, gV start at 0; per
// query head dK_h, dV_h accumulate in float over every block of R consecutive
// rows (a column's gradient sums over all rows that see it):
//   S    = Q_b K^T over the keys the block sees      [R, n_vis]  SGEMM, then
//          s = round(S * scale), P = round(exp(s - m) / l) on each row's
//          visible keys, 0 past them
//   dP   = round(dO_b V^T)                           [R, n_vis]  SGEMM
//   D_i  = sum_j P_ij dP_ij (float), dS = round(P * (dP - D)) in dP's place
//   dV_h += P^T dO_b, dK_h += dS^T Q_b               SGEMMs, beta 1
//   dQ_b = round(scale * (dS K))                     SGEMM, then rounded
// then gK += round(scale * dK_h), gV += round(dV_h) (float), and after the
// group dK = round(gK), dV = round(gV): check/standard_bwd.cpp's steps. R is
// chosen so S and dP fit the workspace together. cuBLAS is column-major: a
// row-major [r, c] array is its column-major [c, r] (reference/gpu_grad.cu
// writes out each GEMM's operands in that form; these are the same calls).
#include "check/standard_bwd_gpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "check/device_compare.h"
#include "check/stored_softmax.cuh"
#include "reference/gpu_rows.cuh"

namespace fa {
namespace {

using namespace gpurows;

constexpr int kThreads = 256;
constexpr int64_t kWorkspaceBytes = int64_t(512) << 20;  // S and dP of one block of rows

// One block per row r of the block: over its first seen[r] entries of s and dp
// ([rows, ld] row-major) P (check/stored_softmax.cuh, the forward standard's),
// dP stored, D and dS as above; the rest 0. Each thread reads back only the
// entries it wrote, so the reductions' barriers are the only ones needed.
__global__ void standard_grad_rows(float* s, float* dp, int64_t ld, const int64_t* seen, float scale, bool bf16) {
  __shared__ float shm[32];
  const int64_t r = blockIdx.x, n = seen[r];
  float* srow = s + r * ld;
  float* dprow = dp + r * ld;
  for (int64_t j = n + threadIdx.x; j < ld; j += blockDim.x) srow[j] = dprow[j] = 0.f;
  if (n == 0) return;
  stored_softmax_row(srow, n, scale, bf16, shm);  // P stored
  float delta = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    dprow[j] = round_stored(dprow[j], bf16);       // dP stored
    delta += srow[j] * dprow[j];
  }
  delta = block_reduce(delta, false, shm);  // D, from the stored P and dP
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dprow[j] = round_stored(srow[j] * (dprow[j] - delta), bf16);
}

// out row r (row stride out_stride) = round(x[r] * factor), for r < n ([n, d]).
__global__ void scale_round_rows(const float* x, int d, int64_t n, float factor, bool bf16, float* out,
                                 int64_t out_stride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * d; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, e = i % d;
    out[r * out_stride + e] = round_stored(x[i] * factor, bf16);
  }
}

// sum[i] += round(x[i] * factor), for i < n: a query head's stored dK_h or dV_h
// added to its group's float32 sum.
__global__ void add_stored(const float* x, int64_t n, float factor, bool bf16, float* sum) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    sum[i] += round_stored(x[i] * factor, bf16);
}

void zero(float* x, int64_t n, cudaStream_t st, const char* what) {
  if (n > 0) check_cuda(cudaMemsetAsync(x, 0, size_t(n) * sizeof(float), st), what);
}

// The standard's gradients on the device, the dtype's values in float32.
struct StandardGradsOnDevice {
  DeviceArray<float> dq, dk, dv;  // like Q [batch, seqlen_q, heads, d]; like K [batch, seqlen_k, heads_kv, d]
};

StandardGradsOnDevice run_standard_bwd(const AttnProblem& p, const DeviceInputs& in) {
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    throw KernelError("standard_backward_gpu: the device holds bf16 or fp16 tensors");
  if (!in.q || !in.k || !in.v || !in.dout)
    throw KernelError("standard_backward_gpu: Q, K, V and dO must be on the device");
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  const int64_t q_elems = int64_t(p.batch) * nq * p.heads * d, kv_elems = int64_t(p.batch) * nk * p.heads_kv * d;
  StandardGradsOnDevice out{device_array<float>(q_elems, "cudaMalloc (standard dQ)"),
                            device_array<float>(kv_elems, "cudaMalloc (standard dK)"),
                            device_array<float>(kv_elems, "cudaMalloc (standard dV)")};
  Gemm gemm;
  const cudaStream_t st = gemm.stream();
  // A row that sees no key keeps dQ = 0, a key no row sees dK = dV = 0.
  zero(out.dq.get(), q_elems, st, "cudaMemset (standard dQ)");
  zero(out.dk.get(), kv_elems, st, "cudaMemset (standard dK)");
  zero(out.dv.get(), kv_elems, st, "cudaMemset (standard dV)");
  if (nq == 0 || nk == 0) {
    gemm.sync();
    return out;
  }
  std::vector<int64_t> seen(static_cast<size_t>(nq)), iota(static_cast<size_t>(nq));
  for (int64_t r = 0; r < nq; ++r) {
    seen[size_t(r)] = p.keys_seen(r);
    iota[size_t(r)] = r;
  }
  const int64_t max_vis = std::max<int64_t>(seen.back(), 1);  // rows ascend, and so does what they see
  const int64_t block = std::clamp<int64_t>(kWorkspaceBytes / (2 * int64_t(sizeof(float)) * max_vis), 1, nq);
  const int group = p.heads / p.heads_kv;
  const bool bf16 = p.dtype == DType::bf16;

  auto every_row = device_array<int64_t>(nq, "cudaMalloc (standard rows)");
  auto seen_d = device_array<int64_t>(nq, "cudaMalloc (standard visible keys)");
  auto kf = device_array<float>(nk * d, "cudaMalloc (standard K)");
  auto vf = device_array<float>(nk * d, "cudaMalloc (standard V)");
  auto gk = device_array<float>(nk * d, "cudaMalloc (standard group dK)");
  auto gv = device_array<float>(nk * d, "cudaMalloc (standard group dV)");
  auto dk_h = device_array<float>(nk * d, "cudaMalloc (standard dK_h)");
  auto dv_h = device_array<float>(nk * d, "cudaMalloc (standard dV_h)");
  auto qb = device_array<float>(block * d, "cudaMalloc (standard Q block)");
  auto dob = device_array<float>(block * d, "cudaMalloc (standard dO block)");
  auto dqb = device_array<float>(block * d, "cudaMalloc (standard dQ block)");
  auto s = device_array<float>(block * max_vis, "cudaMalloc (standard S block)");
  auto dp = device_array<float>(block * max_vis, "cudaMalloc (standard dP block)");
  check_cuda(cudaMemcpyAsync(every_row.get(), iota.data(), size_t(nq) * sizeof(int64_t), cudaMemcpyHostToDevice, st),
             "cudaMemcpy (standard rows)");
  check_cuda(cudaMemcpyAsync(seen_d.get(), seen.data(), size_t(nq) * sizeof(int64_t), cudaMemcpyHostToDevice, st),
             "cudaMemcpy (standard visible keys)");

  const float scale = p.scale(), one = 1.f, zero_f = 0.f;
  const int dd = int(d);
  const int64_t kv_n = nk * d;
  for (int b = 0; b < p.batch; ++b)
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      load_head(in.k, p.dtype, nk, p.heads_kv, dd, b, hk, nullptr, nk, 1.f, kf.get(), st);
      load_head(in.v, p.dtype, nk, p.heads_kv, dd, b, hk, nullptr, nk, 1.f, vf.get(), st);
      zero(gk.get(), kv_n, st, "cudaMemset (standard group dK)");
      zero(gv.get(), kv_n, st, "cudaMemset (standard group dV)");
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        zero(dk_h.get(), kv_n, st, "cudaMemset (standard dK_h)");
        zero(dv_h.get(), kv_n, st, "cudaMemset (standard dV_h)");
        for (int64_t r0 = 0; r0 < nq; r0 += block) {
          const int64_t n = std::min(block, nq - r0);
          const int64_t n_vis = seen[size_t(r0 + n - 1)];
          if (n_vis == 0) continue;  // no key seen: every gradient of these rows is 0
          const int rn = int(n), vis = int(n_vis);
          load_head(in.q, p.dtype, nq, p.heads, dd, b, h, every_row.get() + r0, n, 1.f, qb.get(), st);
          load_head(in.dout, p.dtype, nq, p.heads, dd, b, h, every_row.get() + r0, n, 1.f, dob.get(), st);
          // S^T [n_vis, R] = K Q_b^T and dP^T [n_vis, R] = V dO_b^T, unscaled like the host's GEMMs
          check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_T, CUBLAS_OP_N, vis, rn, dd, &one, kf.get(), dd, qb.get(),
                                   dd, &zero_f, s.get(), vis),
                       "cublasSgemm (standard S)");
          check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_T, CUBLAS_OP_N, vis, rn, dd, &one, vf.get(), dd,
                                   dob.get(), dd, &zero_f, dp.get(), vis),
                       "cublasSgemm (standard dP)");
          standard_grad_rows<<<rn, kThreads, 0, st>>>(s.get(), dp.get(), n_vis, seen_d.get() + r0, scale, bf16);
          check_cuda(cudaGetLastError(), "standard_grad_rows launch");
          // dV_h^T [d, n_vis] += dO_b^T P and dK_h^T [d, n_vis] += Q_b^T dS
          check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_T, dd, vis, rn, &one, dob.get(), dd, s.get(),
                                   vis, &one, dv_h.get(), dd),
                       "cublasSgemm (standard dV)");
          check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_T, dd, vis, rn, &one, qb.get(), dd, dp.get(),
                                   vis, &one, dk_h.get(), dd),
                       "cublasSgemm (standard dK)");
          // dQ_b^T [d, R] = K^T dS^T, then scaled and stored
          check_cublas(cublasSgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_N, dd, rn, vis, &one, kf.get(), dd, dp.get(),
                                   vis, &zero_f, dqb.get(), dd),
                       "cublasSgemm (standard dQ)");
          float* dq_rows = out.dq.get() + ((int64_t(b) * nq + r0) * p.heads + h) * d;
          scale_round_rows<<<grid_for(n * d, kThreads), kThreads, 0, st>>>(dqb.get(), dd, n, scale, bf16, dq_rows,
                                                                           int64_t(p.heads) * d);
          check_cuda(cudaGetLastError(), "scale_round_rows launch");
        }
        // This head's dK_h = round(scale * sum), dV_h = round(sum), added to the group's.
        add_stored<<<grid_for(kv_n, kThreads), kThreads, 0, st>>>(dk_h.get(), kv_n, scale, bf16, gk.get());
        check_cuda(cudaGetLastError(), "add_stored launch");
        add_stored<<<grid_for(kv_n, kThreads), kThreads, 0, st>>>(dv_h.get(), kv_n, 1.f, bf16, gv.get());
        check_cuda(cudaGetLastError(), "add_stored launch");
      }
      // The group's sums, stored.
      const int64_t at = (int64_t(b) * nk * p.heads_kv + hk) * d;
      scale_round_rows<<<grid_for(kv_n, kThreads), kThreads, 0, st>>>(gk.get(), dd, nk, 1.f, bf16, out.dk.get() + at,
                                                                      int64_t(p.heads_kv) * d);
      check_cuda(cudaGetLastError(), "scale_round_rows launch");
      scale_round_rows<<<grid_for(kv_n, kThreads), kThreads, 0, st>>>(gv.get(), dd, nk, 1.f, bf16, out.dv.get() + at,
                                                                      int64_t(p.heads_kv) * d);
      check_cuda(cudaGetLastError(), "scale_round_rows launch");
    }
  gemm.sync();
  return out;
}

}  // namespace

HostGrads standard_backward_gpu(const AttnProblem& p, const DeviceInputs& in) {
  const StandardGradsOnDevice dev = run_standard_bwd(p, in);
  HostGrads g;
  g.dq.resize(size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim);
  g.dk.resize(size_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim);
  g.dv.resize(g.dk.size());
  auto back = [](std::vector<float>& dst, const float* src, const char* what) {
    if (!dst.empty()) check_cuda(cudaMemcpy(dst.data(), src, dst.size() * sizeof(float), cudaMemcpyDeviceToHost), what);
  };
  back(g.dq, dev.dq.get(), "cudaMemcpy (standard dQ back)");
  back(g.dk, dev.dk.get(), "cudaMemcpy (standard dK back)");
  back(g.dv, dev.dv.get(), "cudaMemcpy (standard dV back)");
  return g;
}

GradComparison standard_grad_errors_gpu(const AttnProblem& p, const DeviceInputs& in, const DeviceGrads& ref) {
  const StandardGradsOnDevice dev = run_standard_bwd(p, in);
  return compare_grads_gpu(p, DeviceGradOutputs{dev.dq.get(), dev.dk.get(), dev.dv.get(), DType::f32}, ref);
}

}  // namespace fa
