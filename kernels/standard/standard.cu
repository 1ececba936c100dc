// cuBLAS glue and the softmax kernel of the standard attention (standard.cuh).
#include "standard/standard.cuh"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/mask.cuh"
#include "standard/standard_glue.h"
#include "standard/row_reduce.cuh"

namespace fa {
namespace {

constexpr int kSoftmaxThreads = 256;

// Workspace layout: six pointer arrays (A, B, C of both GEMMs), then S, then P.
int64_t pointer_bytes(const AttnParams& p) {
  return round_up(6 * int64_t(p.batch) * p.heads * int64_t(sizeof(void*)), 256);
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
  mx = block_reduce<kSoftmaxThreads>(mx, true, scratch);
  float sum = 0.f;
  for (int j = threadIdx.x; j < end; j += kSoftmaxThreads)
    sum += __expf(ElemTraits<Elem>::to_float(s[j]) - mx);
  sum = block_reduce<kSoftmaxThreads>(sum, false, scratch);

  const float inv = end > 0 ? 1.f / sum : 0.f;
  for (int j = threadIdx.x; j < p.seqlen_k; j += kSoftmaxThreads) {
    const float v = j < end ? __expf(ElemTraits<Elem>::to_float(s[j]) - mx) * inv : 0.f;
    out[j] = ElemTraits<Elem>::from_float(v);
  }
  if (threadIdx.x == 0) p.lse[row_id] = end > 0 ? mx + logf(sum) : -INFINITY;
}

template <typename Elem>
int launch_typed(const AttnParams& p, cudaStream_t stream, cudaDataType_t dt) {
  cublasHandle_t handle = nullptr;
  FA_CUDA_RETURN_IF_ERROR(cudaError_t(cublas_bind(stream, &handle)));

  const int n = p.batch * p.heads;
  auto* base = static_cast<char*>(p.workspace);
  auto** ptrs = reinterpret_cast<void**>(base);
  Elem* S = reinterpret_cast<Elem*>(base + pointer_bytes(p));
  Elem* P = S + score_elems(p);
  fill_pointers<Elem><<<(n + 127) / 128, 128, 0, stream>>>(p, ptrs, S, P);
  FA_CUDA_RETURN_LAUNCH_ERROR();

  // S^T (seqlen_k x seqlen_q, column-major) = K (as op T) * Q^T
  FA_CUDA_RETURN_IF_ERROR(cudaError_t(gemm_batched(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, p.seqlen_k, p.seqlen_q, p.head_dim, p.softmax_scale,
      ptrs + 0 * n, p.k_row_stride, ptrs + 1 * n, p.q_row_stride, 0.f, ptrs + 2 * n, p.seqlen_k, n,
      dt, dt)));

  softmax_rows<Elem><<<dim3(unsigned(int64_t(n) * p.seqlen_q)), kSoftmaxThreads, 0, stream>>>(p, S, P);
  FA_CUDA_RETURN_LAUNCH_ERROR();

  // O^T (head_dim x seqlen_q) = V^T * P^T
  return gemm_batched(handle, CUBLAS_OP_N, CUBLAS_OP_N, p.head_dim, p.seqlen_q, p.seqlen_k, 1.f,
                      ptrs + 3 * n, p.v_row_stride, ptrs + 4 * n, p.seqlen_k, 0.f, ptrs + 5 * n,
                      p.o_row_stride, n, dt, dt);
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
