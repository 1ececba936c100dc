// The float64 reference's device pass. Per (batch, kv head) K and V become
// double [seqlen_k, d]; per query head, per block of R checked rows:
//   Q_b   = scale * Q[rows]                        [R, d]      (the host's scaled Q)
//   S     = Q_b K^T over the keys the block sees   [R, n_vis]  DGEMM
//   P     = exp(S - m) on each row's visible keys, 0 past them; LSE = m + log l
//   O_b   = P V / l                                [R, d]      DGEMM
// R is chosen so S fits the workspace. cuBLAS is column-major: a row-major
// [r, c] array with row stride c is its column-major [c, r], so S^T = K Q_b^T
// is gemm(T, N) on K's and Q_b's buffers and O_b^T = V^T P^T is gemm(N, N).
#include "reference/gpu_forward.h"

#include <cmath>

#include "reference/gpu_rows.cuh"

namespace fa {
// The one place that fills a DeviceReference.
struct DeviceReferenceAccess {
  static void set(DeviceReference& r, std::vector<int64_t> rows, std::shared_ptr<int64_t> rows_d,
                  std::shared_ptr<double> o, std::shared_ptr<double> lse) {
    r.rows_ = std::move(rows);
    r.rows_d_ = std::move(rows_d);
    r.o_ = std::move(o);
    r.lse_ = std::move(lse);
  }
};
}  // namespace fa

namespace fa::gpurows {
namespace {

// out row r (row stride out_stride) = o[r] * inv_l[r], for r < n.
__global__ void normalize_rows(const double* o, int d, int64_t n, const double* inv_l, double* out,
                               int64_t out_stride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * d; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, e = i % d;
    out[r * out_stride + e] = o[i] * inv_l[r];
  }
}

}  // namespace

DeviceReference forward_f64(const AttnProblem& p, const DeviceInputs& in, std::vector<int64_t> rows_h,
                            const std::vector<int64_t>& seen, int64_t workspace_bytes) {
  const int64_t n_rows = int64_t(rows_h.size()), d = p.head_dim, nq = p.seqlen_q, nk = p.seqlen_k;
  const int64_t o_elems = int64_t(p.batch) * n_rows * p.heads * d, lse_elems = int64_t(p.batch) * p.heads * n_rows;
  auto rows_d = device_array<int64_t>(n_rows, "cudaMalloc (reference rows)");
  auto o_d = device_array<double>(o_elems, "cudaMalloc (reference O)");
  auto lse_d = device_array<double>(lse_elems, "cudaMalloc (reference LSE)");
  int64_t* rows = rows_d.get();
  double* o = o_d.get();
  double* lse = lse_d.get();
  const std::vector<int64_t>& rows_v = rows_h;
  auto result = [&] {
    DeviceReference out;
    DeviceReferenceAccess::set(out, std::move(rows_h), shared(std::move(rows_d)), shared(std::move(o_d)),
                               shared(std::move(lse_d)));
    return out;
  };
  if (n_rows == 0) return result();
  const int group = p.heads / p.heads_kv;
  const int64_t max_vis = seen.back();  // rows ascend, and so does what they see
  const int64_t block = std::clamp<int64_t>(workspace_bytes / (int64_t(sizeof(double)) * std::max<int64_t>(max_vis, 1)),
                                            1, n_rows);
  Gemm gemm;
  const cudaStream_t st = gemm.stream();
  auto seen_d = device_array<int64_t>(n_rows, "cudaMalloc (reference visible keys)");
  auto kd = device_array<double>(nk * d, "cudaMalloc (reference K)");
  auto vd = device_array<double>(nk * d, "cudaMalloc (reference V)");
  auto qb = device_array<double>(block * d, "cudaMalloc (reference Q block)");
  auto s = device_array<double>(block * std::max<int64_t>(max_vis, 1), "cudaMalloc (reference S block)");
  auto ob = device_array<double>(block * d, "cudaMalloc (reference O block)");
  auto inv_l = device_array<double>(block, "cudaMalloc (reference 1/l)");
  check_cuda(cudaMemcpyAsync(rows, rows_v.data(), size_t(n_rows) * 8, cudaMemcpyHostToDevice, st),
             "cudaMemcpy (reference rows)");
  check_cuda(cudaMemcpyAsync(seen_d.get(), seen.data(), size_t(n_rows) * 8, cudaMemcpyHostToDevice, st),
             "cudaMemcpy (reference visible keys)");
  // Rows whose block sees no key are never written: O = 0 is their value.
  check_cuda(cudaMemsetAsync(o, 0, size_t(o_elems) * sizeof(double), st), "cudaMemset (reference O)");

  const double scale = p.scale_f64(), one = 1.0, zero = 0.0;
  for (int b = 0; b < p.batch; ++b)
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      load_head(in.k, p.dtype, nk, p.heads_kv, int(d), b, hk, nullptr, nk, 1.0, kd.get(), st);
      load_head(in.v, p.dtype, nk, p.heads_kv, int(d), b, hk, nullptr, nk, 1.0, vd.get(), st);
      for (int h = hk * group; h < (hk + 1) * group; ++h)
        for (int64_t r0 = 0; r0 < n_rows; r0 += block) {
          const int64_t n = std::min(block, n_rows - r0);
          const int64_t n_vis = seen[size_t(r0 + n - 1)];
          load_head(in.q, p.dtype, nq, p.heads, int(d), b, h, rows + r0, n, scale, qb.get(), st);
          if (n_vis > 0)  // S^T [n_vis, n] = K[:n_vis] (K's buffer read as d x n_vis, transposed) x Q_b^T
            check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_T, CUBLAS_OP_N, int(n_vis), int(n), int(d), &one, kd.get(),
                                     int(d), qb.get(), int(d), &zero, s.get(), int(n_vis)),
                         "cublasDgemm (reference S)");
          double* lse_rows = lse + (int64_t(b) * p.heads + h) * n_rows + r0;
          softmax_rows<<<int(n), kSoftmaxThreads, 0, st>>>(s.get(), n_vis, seen_d.get() + r0, inv_l.get(), lse_rows);
          check_cuda(cudaGetLastError(), "softmax_rows launch");
          if (n_vis == 0) continue;
          // O_b^T [d, n] = V[:n_vis]^T (V's buffer read as d x n_vis) x P^T (P's buffer read as n_vis x n)
          check_cublas(cublasDgemm(gemm.handle(), CUBLAS_OP_N, CUBLAS_OP_N, int(d), int(n), int(n_vis), &one, vd.get(),
                                   int(d), s.get(), int(n_vis), &zero, ob.get(), int(d)),
                       "cublasDgemm (reference O)");
          double* o_rows = o + ((int64_t(b) * n_rows + r0) * p.heads + h) * d;
          normalize_rows<<<grid_for(n * d, 256), 256, 0, st>>>(ob.get(), int(d), n, inv_l.get(), o_rows,
                                                               int64_t(p.heads) * d);
          check_cuda(cudaGetLastError(), "normalize_rows launch");
        }
    }
  gemm.sync();
  return result();
}

}  // namespace fa::gpurows

namespace fa {

bool gpu_reference_built() { return true; }

ReferenceOutputs DeviceReference::to_host(const AttnProblem& p) const {
  ReferenceOutputs out;
  out.rows = rows_;
  out.o.resize(size_t(p.batch) * rows_.size() * p.heads * p.head_dim);
  out.lse.resize(size_t(p.batch) * p.heads * rows_.size());
  if (!out.o.empty())
    gpurows::check_cuda(cudaMemcpy(out.o.data(), o_.get(), out.o.size() * sizeof(double), cudaMemcpyDeviceToHost),
                        "cudaMemcpy (reference O back)");
  if (!out.lse.empty())
    gpurows::check_cuda(cudaMemcpy(out.lse.data(), lse_.get(), out.lse.size() * sizeof(double), cudaMemcpyDeviceToHost),
                        "cudaMemcpy (reference LSE back)");
  return out;
}

}  // namespace fa
