// cuBLAS glue and the softmax kernel of the standard attention (standard.cuh).
#include "standard/standard.cuh"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <map>

#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/mask.cuh"

namespace fa {
namespace {

constexpr int kSoftmaxThreads = 256;

int64_t score_elems(const AttnParams& p) {
  return int64_t(p.batch) * p.heads * p.seqlen_q * p.seqlen_k;
}
int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
// Workspace layout: six pointer arrays (A, B, C of both GEMMs), then S, then P.
int64_t pointer_bytes(const AttnParams& p) {
  return round_up(6 * int64_t(p.batch) * p.heads * int64_t(sizeof(void*)), 256);
}

// One cuBLAS handle per host thread and device, created on first use (outside the
// timed region: the runner warms up) and kept for the process.
cublasHandle_t cublas_handle(int device) {
  thread_local std::map<int, cublasHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return nullptr;
  handles[device] = h;
  return h;
}

int cublas_to_cuda(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return int(cudaSuccess);
    case CUBLAS_STATUS_ALLOC_FAILED: return int(cudaErrorMemoryAllocation);
    case CUBLAS_STATUS_NOT_SUPPORTED: return int(cudaErrorNotSupported);
    case CUBLAS_STATUS_INVALID_VALUE: return int(cudaErrorInvalidValue);
    default: return int(cudaErrorUnknown);
  }
}

// Per (batch, head): K, Q, S for S^T = K Q^T and V, P, O for O^T = V^T P^T (cuBLAS is
// column-major, our tensors row-major). K/V head for GQA: h / (heads / heads_kv).
template <typename Elem>
__global__ void fill_pointers(const AttnParams p, void** ptrs, Elem* S, Elem* P) {
  const int bh = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = p.batch * p.heads;
  if (bh >= n) return;
  const int b = bh / p.heads, h = bh % p.heads, hk = h / (p.heads / p.heads_kv);
  const int64_t s_off = int64_t(bh) * p.seqlen_q * p.seqlen_k;
  // cuBLAS takes one array type for inputs and outputs; inputs are only read.
  ptrs[0 * n + bh] = static_cast<Elem*>(const_cast<void*>(p.k)) + b * p.k_batch_stride + hk * p.k_head_stride;
  ptrs[1 * n + bh] = static_cast<Elem*>(const_cast<void*>(p.q)) + b * p.q_batch_stride + h * p.q_head_stride;
  ptrs[2 * n + bh] = S + s_off;
  ptrs[3 * n + bh] = static_cast<Elem*>(const_cast<void*>(p.v)) + b * p.v_batch_stride + hk * p.v_head_stride;
  ptrs[4 * n + bh] = P + s_off;
  ptrs[5 * n + bh] = static_cast<Elem*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
}

__device__ float block_reduce(float v, bool is_max, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffff, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  __syncthreads();  // scratch may still be read from the previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int i = 1; i < kSoftmaxThreads / 32; ++i) v = is_max ? fmaxf(v, scratch[i]) : v + scratch[i];
  return v;
}

// One CTA per score row: P = softmax(S) over the keys the row sees (0 elsewhere),
// LSE = max + log(sum). S already carries the softmax scale.
template <typename Elem>
__global__ void __launch_bounds__(kSoftmaxThreads)
    softmax_rows(const AttnParams p, const Elem* S, Elem* P) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const int64_t row_id = blockIdx.x;  // (b*heads + h) * seqlen_q + i
  const int i = int(row_id % p.seqlen_q);
  const int end = KeyRange{p.seqlen_q, p.seqlen_k, p.causal}.key_end(i);
  const Elem* s = S + row_id * p.seqlen_k;
  Elem* out = P + row_id * p.seqlen_k;

  float mx = -INFINITY;
  for (int j = threadIdx.x; j < end; j += kSoftmaxThreads)
    mx = fmaxf(mx, ElemTraits<Elem>::to_float(s[j]));
  mx = block_reduce(mx, true, scratch);
  float sum = 0.f;
  for (int j = threadIdx.x; j < end; j += kSoftmaxThreads)
    sum += __expf(ElemTraits<Elem>::to_float(s[j]) - mx);
  sum = block_reduce(sum, false, scratch);

  const float inv = end > 0 ? 1.f / sum : 0.f;
  for (int j = threadIdx.x; j < p.seqlen_k; j += kSoftmaxThreads) {
    const float v = j < end ? __expf(ElemTraits<Elem>::to_float(s[j]) - mx) * inv : 0.f;
    out[j] = ElemTraits<Elem>::from_float(v);
  }
  if (threadIdx.x == 0) p.lse[row_id] = end > 0 ? mx + logf(sum) : -INFINITY;
}

template <typename Elem>
int launch_typed(const AttnParams& p, cudaStream_t stream, cudaDataType_t dt) {
  int device = 0;
  FA_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  cublasHandle_t handle = cublas_handle(device);
  if (handle == nullptr) return int(cudaErrorInitializationError);
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) return int(cudaErrorUnknown);

  const int n = p.batch * p.heads;
  auto* base = static_cast<char*>(p.workspace);
  auto** ptrs = reinterpret_cast<void**>(base);
  Elem* S = reinterpret_cast<Elem*>(base + pointer_bytes(p));
  Elem* P = S + score_elems(p);
  fill_pointers<Elem><<<(n + 127) / 128, 128, 0, stream>>>(p, ptrs, S, P);
  FA_CUDA_RETURN_LAUNCH_ERROR();

  const float alpha = p.softmax_scale, one = 1.f, zero = 0.f;
  // S^T (seqlen_k x seqlen_q, column-major) = K (as op T) * Q^T
  cublasStatus_t st = cublasGemmBatchedEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, p.seqlen_k, p.seqlen_q, p.head_dim, &alpha, const_cast<const void* const*>(ptrs + 0 * n),
      dt, int(p.k_row_stride), const_cast<const void* const*>(ptrs + 1 * n), dt, int(p.q_row_stride), &zero,
      ptrs + 2 * n, dt, p.seqlen_k, n, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_to_cuda(st);

  softmax_rows<Elem><<<dim3(unsigned(int64_t(n) * p.seqlen_q)), kSoftmaxThreads, 0, stream>>>(p, S, P);
  FA_CUDA_RETURN_LAUNCH_ERROR();

  // O^T (head_dim x seqlen_q) = V^T * P^T
  st = cublasGemmBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, p.head_dim, p.seqlen_q, p.seqlen_k,
                           &one, const_cast<const void* const*>(ptrs + 3 * n), dt, int(p.v_row_stride), const_cast<const void* const*>(ptrs + 4 * n), dt,
                           p.seqlen_k, &zero, ptrs + 5 * n, dt,
                           int(p.o_row_stride), n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return cublas_to_cuda(st);
}

}  // namespace

int64_t standard_workspace_bytes(const AttnParams& p) {
  return pointer_bytes(p) + 2 * score_elems(p) * 2;  // S and P, 16-bit
}

const char* standard_unsupported(const AttnParams& p, ElemType dtype) {
  if (p.dtype != dtype) return "dtype not built for this variant";
  if (p.q_row_stride > INT32_MAX || p.k_row_stride > INT32_MAX || p.v_row_stride > INT32_MAX ||
      p.o_row_stride > INT32_MAX)
    return "row strides beyond cuBLAS's 32-bit leading dimension";
  if (int64_t(p.batch) * p.heads * p.seqlen_q > INT32_MAX) return "too many score rows";
  return nullptr;
}

int standard_launch(const AttnParams& p, cudaStream_t stream) {
  if (p.workspace == nullptr || p.workspace_bytes < standard_workspace_bytes(p))
    return int(cudaErrorInvalidValue);
  if (p.dtype == ElemType::bf16) return launch_typed<__nv_bfloat16>(p, stream, CUDA_R_16BF);
  if (p.dtype == ElemType::f16) return launch_typed<__half>(p, stream, CUDA_R_16F);
  return int(cudaErrorInvalidValue);
}

}  // namespace fa
