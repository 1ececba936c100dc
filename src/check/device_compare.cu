// Each thread accumulates its share of the elements (a fixed grid-stride
// walk), each block reduces its threads' figures in shared memory in a fixed
// tree order, and the host adds the blocks' in order: the same bits every run.
#include "check/device_compare.h"

#include <cmath>
#include <vector>

#include "check/error_accumulator.h"
#include "reference/gpu_rows.cuh"

namespace fa {
namespace {

using namespace gpurows;

constexpr int kThreads = 256;
constexpr int kBlocks = 1024;

// One thread's, one block's, then all of them: ErrorAccumulator's figures.
struct Partial {
  double max_abs, max_rel, diff2, ref2;
  unsigned long long nonfinite;
  int ref_broken;  // a non-finite reference value: the maxima are NaN
  int lse_wrong;   // a row that sees no key without -inf in LSE
};

__device__ inline void add(Partial& a, double x, double r) {
  if (!isfinite(r)) {
    a.ref_broken = 1;
    return;
  }
  if (!isfinite(x)) {
    ++a.nonfinite;
    return;
  }
  const double err = fabs(x - r);
  a.max_abs = fmax(a.max_abs, err);
  a.max_rel = fmax(a.max_rel, err / (fabs(r) + rel_eps));
  a.diff2 += err * err;
  a.ref2 += r * r;
}

__device__ inline void merge(Partial& a, const Partial& b) {
  a.max_abs = fmax(a.max_abs, b.max_abs);
  a.max_rel = fmax(a.max_rel, b.max_rel);
  a.diff2 += b.diff2;
  a.ref2 += b.ref2;
  a.nonfinite += b.nonfinite;
  a.ref_broken |= b.ref_broken;
  a.lse_wrong |= b.lse_wrong;
}

__device__ void block_result(Partial mine, Partial* out) {
  __shared__ Partial shm[kThreads];
  shm[threadIdx.x] = mine;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) merge(shm[threadIdx.x], shm[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = shm[0];
}

__device__ inline double load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ inline double load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ inline double load(const float* p, int64_t i) { return p[i]; }

// O: element i of the reference [batch, n_rows, heads * d] against the
// outputs' [batch, rows, heads * d] at its row.
template <typename T>
__global__ void compare_o(const T* o, int64_t rows, const int64_t* row_of, const double* ref, int64_t batch,
                          int64_t n_rows, int64_t hd, Partial* out) {
  Partial a{};
  const int64_t total = batch * n_rows * hd;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t e = i % hd, br = i / hd, ri = br % n_rows, b = br / n_rows;
    const int64_t row = row_of ? row_of[ri] : ri;
    add(a, load(o, (b * rows + row) * hd + e), ref[i]);
  }
  block_result(a, out);
}

// LSE: the reference's [batch * heads, n_rows] against the outputs' [batch * heads, rows].
__global__ void compare_lse(const float* lse, int64_t rows, const int64_t* row_of, const double* ref, int64_t bh,
                            int64_t n_rows, Partial* out) {
  Partial a{};
  const int64_t total = bh * n_rows;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ri = i % n_rows, row = row_of ? row_of[ri] : ri;
    const double x = lse[(i / n_rows) * rows + row], r = ref[i];
    if (isinf(r)) {  // a row that sees no key: only -inf is right
      if (!(isinf(x) && x < 0)) a.lse_wrong = 1;
    } else {
      add(a, x, r);
    }
  }
  block_result(a, out);
}

// The blocks' figures, added in block order on the host.
Partial total_of(const DeviceArray<Partial>& parts) {
  std::vector<Partial> h(kBlocks);
  check_cuda(cudaMemcpy(h.data(), parts.get(), h.size() * sizeof(Partial), cudaMemcpyDeviceToHost),
             "cudaMemcpy (comparison figures back)");
  Partial t{};
  for (const Partial& p : h) {
    t.max_abs = std::max(t.max_abs, p.max_abs);
    t.max_rel = std::max(t.max_rel, p.max_rel);
    t.diff2 += p.diff2;
    t.ref2 += p.ref2;
    t.nonfinite += p.nonfinite;
    t.ref_broken |= p.ref_broken;
    t.lse_wrong |= p.lse_wrong;
  }
  return t;
}

double rel_l2(const Partial& t) { return t.ref2 > 0 ? std::sqrt(t.diff2 / t.ref2) : std::sqrt(t.diff2); }

}  // namespace

ErrorMetrics compare_outputs_gpu(const AttnProblem& p, const DeviceOutputs& out, const DeviceReference& ref) {
  const int64_t n_rows = int64_t(ref.rows().size()), hd = int64_t(p.heads) * p.head_dim;
  ErrorMetrics m;
  m.rows_checked = n_rows;
  m.sampled = n_rows < p.seqlen_q;
  if (n_rows == 0) return m;
  auto parts = device_array<Partial>(kBlocks, "cudaMalloc (comparison figures)");
  if (out.dtype == DType::bf16)
    compare_o<<<kBlocks, kThreads>>>(static_cast<const __nv_bfloat16*>(out.o), out.rows, out.row_of, ref.o(), p.batch,
                                     n_rows, hd, parts.get());
  else if (out.dtype == DType::f16)
    compare_o<<<kBlocks, kThreads>>>(static_cast<const __half*>(out.o), out.rows, out.row_of, ref.o(), p.batch, n_rows,
                                     hd, parts.get());
  else
    compare_o<<<kBlocks, kThreads>>>(static_cast<const float*>(out.o), out.rows, out.row_of, ref.o(), p.batch, n_rows,
                                     hd, parts.get());
  check_cuda(cudaGetLastError(), "compare_o launch");
  const Partial o = total_of(parts);
  compare_lse<<<kBlocks, kThreads>>>(out.lse, out.rows, out.row_of, ref.lse(), int64_t(p.batch) * p.heads, n_rows,
                                     parts.get());
  check_cuda(cudaGetLastError(), "compare_lse launch");
  const Partial l = total_of(parts);

  m.nonfinite = int64_t(o.nonfinite + l.nonfinite);
  m.o_max_abs = o.ref_broken ? NAN : o.max_abs;
  m.o_max_rel = o.ref_broken ? NAN : o.max_rel;
  m.o_rel_l2 = rel_l2(o);
  m.lse_max_abs = l.ref_broken ? NAN : l.lse_wrong ? INFINITY : l.max_abs;
  m.lse_max_rel = l.ref_broken ? NAN : l.lse_wrong ? INFINITY : l.max_rel;
  m.lse_rel_l2 = rel_l2(l);
  return m;
}

}  // namespace fa
