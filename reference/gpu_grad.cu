// The float64 reference gradients' device pass. Per (batch, kv head) K and V
// become double [seqlen_k, d] and dK, dV accumulate in double [seqlen_k, d]
// over the group's query heads; per query head, per block of R consecutive
// rows (every row: a column's gradient sums over all rows that see it):
//   Q_b = scale * Q[block], dO_b = dO[block]         [R, d]
//   S    = Q_b K^T over the keys the block sees      [R, n_vis]  DGEMM
//   P    = exp(S - m) on each row's visible keys, 0 past them (softmax_rows)
//   O_b  = P V                                       [R, d]      DGEMM
//   D_i  = dO_i . O_i / l_i, P /= l, dS = P * (dP - D) in dP's place, where
//   dP   = dO_b V^T                                  [R, n_vis]  DGEMM
//   dV  += P^T dO_b, dK += dS^T Q_b                  DGEMMs, beta 1
//   dQ_b = scale * dS K                              DGEMM, its checked rows copied out
// R is chosen so S and dP together fit the workspace. cuBLAS is column-major:
// a row-major [r, c] array with row stride c is its column-major [c, r], so
//   S^T  [n_vis, R] = K Q_b^T    gemm(T, N): K's buffer [d, n_vis], Q_b's [d, R]
//   dP^T [n_vis, R] = V dO_b^T   gemm(T, N): V's buffer, dO_b's
//   O_b^T [d, R]    = V^T P^T    gemm(N, N): V's buffer [d, n_vis], P's [n_vis, R]
//   dV^T [d, n_vis] += dO_b^T P  gemm(N, T): dO_b's buffer [d, R], P's [n_vis, R] read as [R, n_vis]
//   dK^T [d, n_vis] += Q_b^T dS  gemm(N, T): Q_b's buffer, dS's
//   dQ_b^T [d, R]   = K^T dS^T   gemm(N, N): K's buffer [d, n_vis], dS's [n_vis, R]
#include "reference/gpu_grad.h"

#include <algorithm>
#include <cmath>

#include "reference/gpu_rows.cuh"

namespace fa {
// The one place that fills a DeviceGrads.
struct DeviceGradsAccess {
  static void set(DeviceGrads& g, std::vector<int64_t> rows, std::vector<int64_t> cols,
                  std::shared_ptr<int64_t> rows_d, std::shared_ptr<int64_t> cols_d, std::shared_ptr<double> dq,
                  std::shared_ptr<double> dk, std::shared_ptr<double> dv) {
    g.rows_ = std::move(rows);
    g.cols_ = std::move(cols);
    g.rows_d_ = std::move(rows_d);
    g.cols_d_ = std::move(cols_d);
    g.dq_ = std::move(dq);
    g.dk_ = std::move(dk);
    g.dv_ = std::move(dv);
  }
};
}  // namespace fa

namespace fa::gpurows {
namespace {

// One block per row r of the block, kSoftmaxThreads threads: D = dO_r . O_r / l
// (o unnormalised, inv_l = 1 / l), then over its ld keys P = p * inv_l in p's
// place and dS = P * (dP - D) in dp's place. Masked entries have p = 0, so dS = 0.
__global__ void grad_rows(double* p, double* dp, int64_t ld, const double* dout, const double* o, int d,
                          const double* inv_l) {
  __shared__ double shm[32];
  const int64_t r = blockIdx.x;
  double dot = 0.0;
  for (int e = threadIdx.x; e < d; e += blockDim.x) dot += dout[r * d + e] * o[r * d + e];
  const double delta = block_reduce(dot, false, shm) * inv_l[r];
  for (int64_t j = threadIdx.x; j < ld; j += blockDim.x) {
    const double pj = p[r * ld + j] * inv_l[r];
    p[r * ld + j] = pj;
    dp[r * ld + j] = pj * (dp[r * ld + j] - delta);
  }
}

// dst row s (row stride dst_stride) = src row idx[s] - first ([*, d]), for s < n.
__global__ void gather_rows(const double* src, int d, const int64_t* idx, int64_t first, int64_t n, double* dst,
                            int64_t dst_stride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * d; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i / d, e = i % d;
    dst[s * dst_stride + e] = src[(idx[s] - first) * d + e];
  }
}

void gather(const double* src, int d, const int64_t* idx, int64_t first, int64_t n, double* dst, int64_t dst_stride,
            cudaStream_t st) {
  if (n <= 0) return;
  gather_rows<<<grid_for(n * d, 256), 256, 0, st>>>(src, d, idx, first, n, dst, dst_stride);
  check_cuda(cudaGetLastError(), "gather_rows launch");
}

template <typename T>
void to_device(T* dst, const std::vector<T>& src, cudaStream_t st, const char* what) {
  if (src.empty()) return;
  check_cuda(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, st), what);
}

}  // namespace

DeviceGrads backward_f64(const AttnProblem& p, const DeviceInputs& in, std::vector<int64_t> rows_h,
                         std::vector<int64_t> cols_h, const std::vector<int64_t>& seen, int64_t workspace_bytes) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  const int64_t n_rows = int64_t(rows_h.size()), n_cols = int64_t(cols_h.size());
  const int64_t dq_elems = int64_t(p.batch) * n_rows * p.heads * d;
  const int64_t dkv_elems = int64_t(p.batch) * n_cols * p.heads_kv * d;
  auto rows = device_array<int64_t>(n_rows, "cudaMalloc (reference checked rows)");
  auto cols = device_array<int64_t>(n_cols, "cudaMalloc (reference checked columns)");
  auto dq = device_array<double>(dq_elems, "cudaMalloc (reference dQ)");
  auto dk = device_array<double>(dkv_elems, "cudaMalloc (reference checked dK)");
  auto dv = device_array<double>(dkv_elems, "cudaMalloc (reference checked dV)");
  // Read by the passes below; the DeviceGrads takes the buffers at the end.
  const std::vector<int64_t>& out_rows = rows_h;
  auto result = [&] {
    DeviceGrads g;
    DeviceGradsAccess::set(g, std::move(rows_h), std::move(cols_h), shared(std::move(rows)), shared(std::move(cols)),
                           shared(std::move(dq)), shared(std::move(dk)), shared(std::move(dv)));
    return g;
  };
  Gemm gemm;
  const cudaStream_t st = gemm.stream();
  to_device(rows.get(), rows_h, st, "cudaMemcpy (reference checked rows)");
  to_device(cols.get(), cols_h, st, "cudaMemcpy (reference checked columns)");
  // A checked row whose block sees no key is never written (dQ = 0 is its
  // value), nor are dK and dV when there is no query row.
  if (dq_elems > 0)
    check_cuda(cudaMemsetAsync(dq.get(), 0, size_t(dq_elems) * sizeof(double), st), "cudaMemset (reference dQ)");
  if (dkv_elems > 0) {
    check_cuda(cudaMemsetAsync(dk.get(), 0, size_t(dkv_elems) * sizeof(double), st), "cudaMemset (reference dK)");
    check_cuda(cudaMemsetAsync(dv.get(), 0, size_t(dkv_elems) * sizeof(double), st), "cudaMemset (reference dV)");
  }
  if (nq == 0 || (n_rows == 0 && n_cols == 0)) {
    gemm.sync();
    return result();
  }
  const int group = p.heads / p.heads_kv;
  const int64_t max_vis = std::max<int64_t>(seen.back(), 1);  // rows ascend, and so does what they see
  const int64_t block = std::clamp<int64_t>(workspace_bytes / (2 * int64_t(sizeof(double)) * max_vis), 1, nq);
  auto every_row = device_array<int64_t>(nq, "cudaMalloc (reference rows)");
  auto seen_d = device_array<int64_t>(nq, "cudaMalloc (reference visible keys)");
  auto kd = device_array<double>(nk * d, "cudaMalloc (reference K)");
  auto vd = device_array<double>(nk * d, "cudaMalloc (reference V)");
  auto dk_acc = device_array<double>(nk * d, "cudaMalloc (reference dK)");
  auto dv_acc = device_array<double>(nk * d, "cudaMalloc (reference dV)");
  auto qb = device_array<double>(block * d, "cudaMalloc (reference Q block)");
  auto dob = device_array<double>(block * d, "cudaMalloc (reference dO block)");
  auto ob = device_array<double>(block * d, "cudaMalloc (reference O block)");
  auto dqb = device_array<double>(block * d, "cudaMalloc (reference dQ block)");
  auto s = device_array<double>(block * max_vis, "cudaMalloc (reference S block)");
  auto dp = device_array<double>(block * max_vis, "cudaMalloc (reference dP block)");
  auto inv_l = device_array<double>(block, "cudaMalloc (reference 1/l)");
  auto lse = device_array<double>(block, "cudaMalloc (reference LSE block)");
  std::vector<int64_t> iota(static_cast<size_t>(nq));
  for (int64_t r = 0; r < nq; ++r) iota[size_t(r)] = r;
  to_device(every_row.get(), iota, st, "cudaMemcpy (reference rows)");
  to_device(seen_d.get(), seen, st, "cudaMemcpy (reference visible keys)");

  const double scale = p.scale_f64(), one = 1.0, zero = 0.0;
  for (int b = 0; b < p.batch; ++b)
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      load_head(in.k, p.dtype, nk, p.heads_kv, int(d), b, hk, nullptr, nk, 1.0, kd.get(), st);
      load_head(in.v, p.dtype, nk, p.heads_kv, int(d), b, hk, nullptr, nk, 1.0, vd.get(), st);
      check_cuda(cudaMemsetAsync(dk_acc.get(), 0, size_t(nk * d) * sizeof(double), st), "cudaMemset (reference dK)");
      check_cuda(cudaMemsetAsync(dv_acc.get(), 0, size_t(nk * d) * sizeof(double), st), "cudaMemset (reference dV)");
      for (int h = hk * group; h < (hk + 1) * group; ++h)
        for (int64_t r0 = 0; r0 < nq; r0 += block) {
          const int64_t n = std::min(block, nq - r0);
          const int64_t n_vis = seen[size_t(r0 + n - 1)];
          if (n_vis == 0) continue;  // no key seen: every gradient of these rows is 0
          const int rn = int(n), vis = int(n_vis), dd = int(d);
          load_head(in.q, p.dtype, nq, p.heads, dd, b, h, every_row.get() + r0, n, scale, qb.get(), st);
          load_head(in.dout, p.dtype, nq, p.heads, dd, b, h, every_row.get() + r0, n, 1.0, dob.get(), st);
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_T, CUBLAS_OP_N, vis, rn, dd, &one, kd.get(), dd, qb.get(),
                                   dd, &zero, s.get(), vis),
                       "cublasDgemm (reference S)");
          softmax_rows<<<rn, kSoftmaxThreads, 0, st>>>(s.get(), n_vis, seen_d.get() + r0, inv_l.get(), lse.get());
          check_cuda(cudaGetLastError(), "softmax_rows launch");
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_N, dd, rn, vis, &one, vd.get(), dd, s.get(),
                                   vis, &zero, ob.get(), dd),
                       "cublasDgemm (reference O)");
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_T, CUBLAS_OP_N, vis, rn, dd, &one, vd.get(), dd,
                                   dob.get(), dd, &zero, dp.get(), vis),
                       "cublasDgemm (reference dP)");
          grad_rows<<<rn, kSoftmaxThreads, 0, st>>>(s.get(), dp.get(), n_vis, dob.get(), ob.get(), dd, inv_l.get());
          check_cuda(cudaGetLastError(), "grad_rows launch");
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_T, dd, vis, rn, &one, dob.get(), dd, s.get(),
                                   vis, &one, dv_acc.get(), dd),
                       "cublasDgemm (reference dV)");
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_T, dd, vis, rn, &one, qb.get(), dd, dp.get(),
                                   vis, &one, dk_acc.get(), dd),
                       "cublasDgemm (reference dK)");
          // The block's checked rows: rows[first, first + ns) lie in [r0, r0 + n).
          const int64_t first = std::lower_bound(out_rows.begin(), out_rows.end(), r0) - out_rows.begin();
          const int64_t ns = std::lower_bound(out_rows.begin() + first, out_rows.end(), r0 + n) -
                             (out_rows.begin() + first);
          if (ns == 0) continue;
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_N, dd, rn, vis, &scale, kd.get(), dd,
                                   dp.get(), vis, &zero, dqb.get(), dd),
                       "cublasDgemm (reference dQ)");
          gather(dqb.get(), dd, rows.get() + first, r0, ns, dq.get() + ((int64_t(b) * n_rows + first) * p.heads + h) * d,
                 int64_t(p.heads) * d, st);
        }
      // The kv head's checked columns.
      const int64_t at = (int64_t(b) * n_cols * p.heads_kv + hk) * d;
      gather(dk_acc.get(), int(d), cols.get(), 0, n_cols, dk.get() + at, int64_t(p.heads_kv) * d, st);
      gather(dv_acc.get(), int(d), cols.get(), 0, n_cols, dv.get() + at, int64_t(p.heads_kv) * d, st);
    }
  gemm.sync();
  return result();
}

}  // namespace fa::gpurows

namespace fa {

SampledGrads DeviceGrads::to_host(const AttnProblem& p) const {
  SampledGrads g;
  g.rows = rows_;
  g.cols = cols_;
  g.dq.resize(size_t(p.batch) * rows_.size() * p.heads * p.head_dim);
  g.dk.resize(size_t(p.batch) * cols_.size() * p.heads_kv * p.head_dim);
  g.dv.resize(g.dk.size());
  auto back = [](std::vector<double>& dst, const double* src, const char* what) {
    if (!dst.empty())
      gpurows::check_cuda(cudaMemcpy(dst.data(), src, dst.size() * sizeof(double), cudaMemcpyDeviceToHost), what);
  };
  back(g.dq, dq_.get(), "cudaMemcpy (reference dQ back)");
  back(g.dk, dk_.get(), "cudaMemcpy (reference dK back)");
  back(g.dv, dv_.get(), "cudaMemcpy (reference dV back)");
  return g;
}

}  // namespace fa
