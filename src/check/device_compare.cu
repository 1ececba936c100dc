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
  double ref_max;  // max |r| over every compared r (the gradient floors' scale)
  int ref_nan;     // a NaN reference value: ref_max is NaN
};

__device__ inline void add(Partial& a, double x, double r) {
  a.ref_max = fmax(a.ref_max, fabs(r));  // fmax drops a NaN: ref_nan keeps it
  if (isnan(r)) a.ref_nan = 1;
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
  a.ref_max = fmax(a.ref_max, b.ref_max);
  a.ref_nan |= b.ref_nan;
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
    t.ref_max = std::max(t.ref_max, p.ref_max);
    t.ref_nan |= p.ref_nan;
  }
  return t;
}

double rel_l2(const Partial& t) { return t.ref2 > 0 ? std::sqrt(t.diff2 / t.ref2) : std::sqrt(t.diff2); }

// compare_o for a tensor in `dtype`: the reference's [batch, n_rows, hd]
// against x's [batch, rows, hd] at row_of's rows; the blocks' figures added.
Partial compare_rows(const void* x, DType dtype, int64_t rows, const int64_t* row_of, const double* ref, int64_t batch,
                     int64_t n_rows, int64_t hd, const DeviceArray<Partial>& parts) {
  if (dtype == DType::bf16)
    compare_o<<<kBlocks, kThreads>>>(static_cast<const __nv_bfloat16*>(x), rows, row_of, ref, batch, n_rows, hd,
                                     parts.get());
  else if (dtype == DType::f16)
    compare_o<<<kBlocks, kThreads>>>(static_cast<const __half*>(x), rows, row_of, ref, batch, n_rows, hd, parts.get());
  else
    compare_o<<<kBlocks, kThreads>>>(static_cast<const float*>(x), rows, row_of, ref, batch, n_rows, hd, parts.get());
  check_cuda(cudaGetLastError(), "compare_o launch");
  return total_of(parts);
}

// ErrorAccumulator's figures as compare_grads reports them.
TensorErrors tensor_errors(const Partial& t) {
  return TensorErrors{t.ref_broken ? NAN : t.max_abs, t.ref_broken ? NAN : t.max_rel, rel_l2(t),
                      int64_t(t.nonfinite), 0.0};
}

double ref_max_abs(const Partial& t) { return t.ref_nan ? NAN : t.ref_max; }

// flag = 1 when a word of a differs from b's (n words of 4 bytes, then tail bytes).
__global__ void differ(const unsigned* a, const unsigned* b, int64_t n, const unsigned char* ta,
                       const unsigned char* tb, int tail, int* flag) {
  bool d = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    d |= a[i] != b[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) d |= ta[threadIdx.x] != tb[threadIdx.x];
  if (d) *flag = 1;
}

}  // namespace

ErrorMetrics compare_outputs_gpu(const AttnProblem& p, const DeviceOutputs& out, const DeviceReference& ref) {
  const int64_t n_rows = int64_t(ref.rows().size()), hd = int64_t(p.heads) * p.head_dim;
  ErrorMetrics m;
  m.rows_checked = n_rows;
  m.sampled = n_rows < p.seqlen_q;
  if (n_rows == 0) return m;
  auto parts = device_array<Partial>(kBlocks, "cudaMalloc (comparison figures)");
  const Partial o = compare_rows(out.o, out.dtype, out.rows, out.row_of, ref.o(), p.batch, n_rows, hd, parts);
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

GradComparison compare_grads_gpu(const AttnProblem& p, const DeviceGradOutputs& out, const DeviceGrads& ref) {
  const int64_t n_rows = int64_t(ref.rows().size()), n_cols = int64_t(ref.cols().size());
  GradComparison c;
  c.errors.rows_checked = n_rows;
  c.errors.cols_checked = n_cols;
  c.errors.sampled = n_rows < p.seqlen_q || n_cols < p.seqlen_k;
  auto parts = device_array<Partial>(kBlocks, "cudaMalloc (comparison figures)");
  const int64_t q_hd = int64_t(p.heads) * p.head_dim, kv_hd = int64_t(p.heads_kv) * p.head_dim;
  if (n_rows > 0) {
    const Partial t = compare_rows(out.dq, out.dtype, p.seqlen_q, ref.rows_on_device(), ref.dq(), p.batch, n_rows,
                                   q_hd, parts);
    c.errors.dq = tensor_errors(t);
    c.dq_ref_max_abs = ref_max_abs(t);
  }
  if (n_cols > 0) {
    const Partial k = compare_rows(out.dk, out.dtype, p.seqlen_k, ref.cols_on_device(), ref.dk(), p.batch, n_cols,
                                   kv_hd, parts);
    c.errors.dk = tensor_errors(k);
    c.dk_ref_max_abs = ref_max_abs(k);
    const Partial v = compare_rows(out.dv, out.dtype, p.seqlen_k, ref.cols_on_device(), ref.dv(), p.batch, n_cols,
                                   kv_hd, parts);
    c.errors.dv = tensor_errors(v);
    c.dv_ref_max_abs = ref_max_abs(v);
  }
  return c;
}

DeviceSnapshot::DeviceSnapshot(const void* at, size_t bytes) : bytes_(bytes) {
  DeviceArray<unsigned char> copy = device_array<unsigned char>(int64_t(bytes), "cudaMalloc (snapshot)");
  if (bytes > 0) check_cuda(cudaMemcpy(copy.get(), at, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy (snapshot)");
  copy_ = std::shared_ptr<void>(copy.release(), DeviceFree{});
}

bool DeviceSnapshot::same_bits(const void* at) const {
  if (bytes_ == 0) return true;
  auto flag = device_array<int>(1, "cudaMalloc (snapshot comparison)");
  check_cuda(cudaMemset(flag.get(), 0, sizeof(int)), "cudaMemset (snapshot comparison)");
  // Device allocations are 256-byte aligned, and so are the executor's tensors:
  // whole words, then the tail bytes.
  const int64_t words = int64_t(bytes_ / 4);
  const int tail = int(bytes_ % 4);
  const auto* a = static_cast<const unsigned char*>(at);
  const auto* b = static_cast<const unsigned char*>(copy_.get());
  differ<<<grid_for(std::max<int64_t>(words, 1), kThreads), kThreads>>>(
      reinterpret_cast<const unsigned*>(a), reinterpret_cast<const unsigned*>(b), words, a + words * 4, b + words * 4,
      tail, flag.get());
  check_cuda(cudaGetLastError(), "differ launch");
  int differs = 0;
  check_cuda(cudaMemcpy(&differs, flag.get(), sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy (snapshot comparison)");
  return differs == 0;
}

}  // namespace fa
