// cuBLAS calls and the two row kernels of the standard attention backward
// (standard_bwd.cuh).
#include "standard/standard_bwd.cuh"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/mask.cuh"
#include "standard/row_reduce.cuh"
#include "standard/standard_glue.h"

namespace fa {
namespace {

constexpr int kRowThreads = 128;

// Pointer arrays for cuBLAS: kPerHead arrays of batch*heads entries, then dK and
// dV destinations (batch*heads_kv entries each). Query head (b, h) sits at entry
// (h % G) * B*H_kv + b * H_kv + h / G: the g-th members of every group are
// contiguous, so one batched call over B*H_kv entries adds member g into its
// KV head's dK/dV.
enum PerHead { kK, kQ, kP, kV, kDO, kDS, kDQ, kPerHead };

struct BwdLayout {
  int64_t n, n_kv, group;
  int64_t scores_off, dscores_off, acc_off, total;
};

BwdLayout bwd_layout(const AttnParams& p) {
  BwdLayout l;
  l.n = int64_t(p.batch) * p.heads;
  l.n_kv = int64_t(p.batch) * p.heads_kv;
  l.group = p.heads / p.heads_kv;
  const int64_t score_bytes = round_up(score_elems(p) * 2, 256);  // 16-bit S/P, dP/dS
  l.scores_off = round_up((kPerHead * l.n + 2 * l.n_kv) * int64_t(sizeof(void*)), 256);
  l.dscores_off = l.scores_off + score_bytes;
  l.acc_off = l.dscores_off + score_bytes;
  const int64_t acc_bytes =
      l.group > 1 ? 2 * l.n_kv * p.seqlen_k * int64_t(p.head_dim) * int64_t(sizeof(float)) : 0;
  l.total = l.acc_off + acc_bytes;
  return l;
}

template <typename Elem>
__global__ void fill_bwd_pointers(const AttnParams p, void** ptrs, Elem* scores, Elem* dscores,
                                  float* acc) {
  const int bh = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = p.batch * p.heads, n_kv = p.batch * p.heads_kv, group = p.heads / p.heads_kv;
  if (bh >= n) return;
  const int b = bh / p.heads, h = bh % p.heads, hk = h / group;
  const int kv = b * p.heads_kv + hk;
  const int e = (h % group) * n_kv + kv;
  const int64_t s_off = int64_t(bh) * p.seqlen_q * p.seqlen_k;
  auto in = [](const void* t) { return static_cast<Elem*>(const_cast<void*>(t)); };
  ptrs[kK * n + e] = in(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  ptrs[kQ * n + e] = in(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  ptrs[kP * n + e] = scores + s_off;
  ptrs[kV * n + e] = in(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  ptrs[kDO * n + e] = in(p.dout) + b * p.do_batch_stride + h * p.do_head_stride;
  ptrs[kDS * n + e] = dscores + s_off;
  ptrs[kDQ * n + e] = static_cast<Elem*>(p.dq) + b * p.dq_batch_stride + h * p.dq_head_stride;
  if (h % group != 0) return;
  void** dk = ptrs + kPerHead * n;
  void** dv = dk + n_kv;
  if (group > 1) {
    const int64_t acc_elems = int64_t(p.seqlen_k) * p.head_dim;
    dk[kv] = acc + int64_t(kv) * acc_elems;
    dv[kv] = acc + (int64_t(n_kv) + kv) * acc_elems;
  } else {
    dk[kv] = static_cast<Elem*>(p.dk) + b * p.dk_batch_stride + hk * p.dk_head_stride;
    dv[kv] = static_cast<Elem*>(p.dv) + b * p.dv_batch_stride + hk * p.dv_head_stride;
  }
}

// Vec consecutive elements of a score row, moved as one access (16 bytes for 8).
template <typename Elem, int Vec>
struct alignas(sizeof(Elem) * Vec) ElemPack {
  Elem v[Vec];
};

// One CTA per score row (b*heads + h) * seqlen_q + i: P = exp(S - LSE_i) for the
// keys row i sees, 0 elsewhere, written over S. S already carries the scale.
template <typename Elem, int Vec>
__global__ void __launch_bounds__(kRowThreads) recompute_p(const AttnParams p, Elem* scores) {
  using Pack = ElemPack<Elem, Vec>;
  const int64_t row = blockIdx.x;
  const int i = int(row % p.seqlen_q);
  const float lse = p.lse[row];
  // LSE = -inf: the forward saw no key for this row (its P is 0 everywhere).
  const int end = lse == -INFINITY ? 0 : KeyRange{p.seqlen_q, p.seqlen_k, p.causal}.key_end(i);
  Elem* s = scores + row * p.seqlen_k;
  for (int j0 = threadIdx.x * Vec; j0 < p.seqlen_k; j0 += kRowThreads * Vec) {
    Pack x = *reinterpret_cast<const Pack*>(s + j0);
#pragma unroll
    for (int e = 0; e < Vec; ++e) {
      const float v = j0 + e < end ? __expf(ElemTraits<Elem>::to_float(x.v[e]) - lse) : 0.f;
      x.v[e] = ElemTraits<Elem>::from_float(v);
    }
    *reinterpret_cast<Pack*>(s + j0) = x;
  }
}

// One CTA per score row: dS = P o (dP - D_i) written over dP, with D_i the row's
// softmax-backward sum rowsum(P_i o dP_i) over the stored P and dP (float32, on
// chip), as a framework's softmax backward forms it. (FlashAttention's D_i =
// rowsum(dO_i o O_i) is the same number in exact arithmetic; with dP stored in
// the dtype it is not, and a row whose gradient is 0 -- a single key, P = 1 --
// would keep dP's rounding error instead of cancelling to 0.)
template <typename Elem, int Vec>
__global__ void __launch_bounds__(kRowThreads)
    ds_rows(const AttnParams p, const Elem* probs, Elem* dscores) {
  using Pack = ElemPack<Elem, Vec>;
  __shared__ float scratch[kRowThreads / 32];
  const int64_t row = blockIdx.x;
  const Elem* pr = probs + row * p.seqlen_k;
  Elem* ds = dscores + row * p.seqlen_k;
  float d = 0.f;
  for (int j0 = threadIdx.x * Vec; j0 < p.seqlen_k; j0 += kRowThreads * Vec) {
    const Pack pp = *reinterpret_cast<const Pack*>(pr + j0);
    const Pack x = *reinterpret_cast<const Pack*>(ds + j0);
#pragma unroll
    for (int e = 0; e < Vec; ++e)
      d += ElemTraits<Elem>::to_float(pp.v[e]) * ElemTraits<Elem>::to_float(x.v[e]);
  }
  d = block_reduce<kRowThreads>(d, false, scratch);

  for (int j0 = threadIdx.x * Vec; j0 < p.seqlen_k; j0 += kRowThreads * Vec) {
    const Pack pp = *reinterpret_cast<const Pack*>(pr + j0);
    Pack x = *reinterpret_cast<const Pack*>(ds + j0);
#pragma unroll
    for (int e = 0; e < Vec; ++e)
      x.v[e] = ElemTraits<Elem>::from_float(ElemTraits<Elem>::to_float(pp.v[e]) *
                                            (ElemTraits<Elem>::to_float(x.v[e]) - d));
    *reinterpret_cast<Pack*>(ds + j0) = x;
  }
}

// GQA: the float32 dK/dV sums [B*H_kv, N_k, d] to the dtype, in the tensors' layout.
template <typename Elem>
__global__ void store_kv_grads(const AttnParams p, const float* acc) {
  const int64_t per_head = int64_t(p.seqlen_k) * p.head_dim;
  const int64_t n = int64_t(p.batch) * p.heads_kv * per_head;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < 2 * n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const bool is_v = e >= n;
    const int64_t r = is_v ? e - n : e;
    const int64_t kv = r / per_head;
    const int key = int((r / p.head_dim) % p.seqlen_k), c = int(r % p.head_dim);
    const int b = int(kv / p.heads_kv), hk = int(kv % p.heads_kv);
    Elem* dst = is_v ? static_cast<Elem*>(p.dv) + b * p.dv_batch_stride + key * p.dv_row_stride +
                           hk * p.dv_head_stride
                     : static_cast<Elem*>(p.dk) + b * p.dk_batch_stride + key * p.dk_row_stride +
                           hk * p.dk_head_stride;
    dst[c] = ElemTraits<Elem>::from_float(acc[e]);
  }
}

template <typename Elem, int Vec>
int row_kernels_p(const AttnParams& p, cudaStream_t stream, Elem* scores, unsigned rows) {
  recompute_p<Elem, Vec><<<rows, kRowThreads, 0, stream>>>(p, scores);
  return int(cudaGetLastError());
}
template <typename Elem, int Vec>
int row_kernels_ds(const AttnParams& p, cudaStream_t stream, const Elem* probs, Elem* dscores,
                   unsigned rows) {
  ds_rows<Elem, Vec><<<rows, kRowThreads, 0, stream>>>(p, probs, dscores);
  return int(cudaGetLastError());
}

template <typename Elem>
int launch_typed(const AttnParams& p, cudaStream_t stream, cudaDataType_t dt) {
  cublasHandle_t handle = nullptr;
  FA_CUDA_RETURN_IF_ERROR(cudaError_t(cublas_bind(stream, &handle)));

  const BwdLayout l = bwd_layout(p);
  const int n = int(l.n), n_kv = int(l.n_kv);
  auto* base = static_cast<char*>(p.workspace);
  auto** ptrs = reinterpret_cast<void**>(base);
  Elem* scores = reinterpret_cast<Elem*>(base + l.scores_off);    // S, then P
  Elem* dscores = reinterpret_cast<Elem*>(base + l.dscores_off);  // dP, then dS
  float* acc = reinterpret_cast<float*>(base + l.acc_off);        // G > 1: dK, dV sums
  fill_bwd_pointers<Elem><<<(n + 127) / 128, 128, 0, stream>>>(p, ptrs, scores, dscores, acc);
  FA_CUDA_RETURN_LAUNCH_ERROR();
  auto arr = [&](PerHead a) { return ptrs + a * n; };
  void** dk = ptrs + kPerHead * n;
  void** dv = dk + n_kv;
  const int sq = p.seqlen_q, sk = p.seqlen_k, d = p.head_dim;
  const unsigned rows = unsigned(int64_t(n) * sq);
  // 16-byte row accesses need every row to start 16-byte aligned.
  const bool vec8 = sk % 8 == 0;

  // S^T (sk x sq, column-major) = scale * K (op T) Q^T
  FA_CUDA_RETURN_IF_ERROR(cudaError_t(gemm_batched(handle, CUBLAS_OP_T, CUBLAS_OP_N, sk, sq, d,
                                                   p.softmax_scale, arr(kK), p.k_row_stride,
                                                   arr(kQ), p.q_row_stride, 0.f, arr(kP), sk, n,
                                                   dt, dt)));
  // P = exp(S - LSE), masked, over S
  if (rows > 0)
    FA_CUDA_RETURN_IF_ERROR(cudaError_t(vec8 ? row_kernels_p<Elem, 8>(p, stream, scores, rows)
                                             : row_kernels_p<Elem, 1>(p, stream, scores, rows)));
  // dP^T (sk x sq) = V (op T) dO^T
  FA_CUDA_RETURN_IF_ERROR(cudaError_t(gemm_batched(handle, CUBLAS_OP_T, CUBLAS_OP_N, sk, sq, d,
                                                   1.f, arr(kV), p.v_row_stride, arr(kDO),
                                                   p.do_row_stride, 0.f, arr(kDS), sk, n, dt, dt)));
  // D = rowsum(P o dP); dS = P o (dP - D) over dP
  if (rows > 0)
    FA_CUDA_RETURN_IF_ERROR(
        cudaError_t(vec8 ? row_kernels_ds<Elem, 8>(p, stream, scores, dscores, rows)
                         : row_kernels_ds<Elem, 1>(p, stream, scores, dscores, rows)));
  // dQ^T (d x sq) = scale * K^T dS^T
  FA_CUDA_RETURN_IF_ERROR(cudaError_t(gemm_batched(handle, CUBLAS_OP_N, CUBLAS_OP_N, d, sq, sk,
                                                   p.softmax_scale, arr(kK), p.k_row_stride,
                                                   arr(kDS), sk, 0.f, arr(kDQ), p.dq_row_stride,
                                                   n, dt, dt)));
  // dV^T (d x sk) = dO^T P and dK^T (d x sk) = scale * Q^T dS, one call per member
  // g of each KV head's group (entries g * n_kv ...), summed in float32 for G > 1.
  const bool direct = l.group == 1;
  const cudaDataType_t acc_type = direct ? dt : CUDA_R_32F;
  const int64_t ld_dv = direct ? p.dv_row_stride : d, ld_dk = direct ? p.dk_row_stride : d;
  for (int g = 0; g < l.group; ++g) {
    const float beta = g == 0 ? 0.f : 1.f;
    const int off = g * n_kv;
    FA_CUDA_RETURN_IF_ERROR(cudaError_t(gemm_batched(
        handle, CUBLAS_OP_N, CUBLAS_OP_T, d, sk, sq, 1.f, arr(kDO) + off, p.do_row_stride,
        arr(kP) + off, sk, beta, dv, ld_dv, n_kv, dt, acc_type)));
    FA_CUDA_RETURN_IF_ERROR(cudaError_t(gemm_batched(
        handle, CUBLAS_OP_N, CUBLAS_OP_T, d, sk, sq, p.softmax_scale, arr(kQ) + off,
        p.q_row_stride, arr(kDS) + off, sk, beta, dk, ld_dk, n_kv, dt, acc_type)));
  }
  if (!direct && n_kv > 0 && sk > 0) {
    store_kv_grads<Elem><<<1024, 256, 0, stream>>>(p, acc);
    FA_CUDA_RETURN_LAUNCH_ERROR();
  }
  return 0;
}

}  // namespace

int64_t standard_bwd_workspace_bytes(const AttnParams& p) { return bwd_layout(p).total; }

const char* standard_bwd_unsupported(const AttnParams& p, ElemType dtype) {
  if (p.dtype != dtype) return "dtype not built for this variant";
  for (int64_t ld : {p.q_row_stride, p.k_row_stride, p.v_row_stride, p.o_row_stride,
                     p.do_row_stride, p.dq_row_stride, p.dk_row_stride, p.dv_row_stride})
    if (ld > INT32_MAX) return "row strides beyond cuBLAS's 32-bit leading dimension";
  if (int64_t(p.batch) * p.heads * p.seqlen_q > INT32_MAX) return "too many score rows";
  return nullptr;
}

int standard_bwd_launch(const AttnParams& p, cudaStream_t stream) {
  if (p.workspace == nullptr || p.workspace_bytes < standard_bwd_workspace_bytes(p))
    return int(cudaErrorInvalidValue);
  if (p.dtype == ElemType::bf16) return launch_typed<__nv_bfloat16>(p, stream, CUDA_R_16BF);
  if (p.dtype == ElemType::f16) return launch_typed<__half>(p, stream, CUDA_R_16F);
  return int(cudaErrorInvalidValue);
}

}  // namespace fa
