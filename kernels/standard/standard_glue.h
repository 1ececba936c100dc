// What the standard forward and backward share: one cuBLAS handle per host thread
// and device, status mapping to cudaError_t, the batched GEMM call both passes
// make (pointer arrays, float32 compute), and the size of one N^2 score buffer.
// Defined once in standard_glue.cu, so the handle cache is a single object.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"

namespace fa {

// The handle of the current host thread for the current device, bound to
// `stream`; created on first use (outside the timed region: the runner warms
// up) and kept for the process. Returns a cudaError_t as int.
int cublas_bind(cudaStream_t stream, cublasHandle_t* handle);

int cublas_to_cuda(cublasStatus_t s);

// C[i] = alpha * op(A[i]) op(B[i]) + beta * C[i] for i < count, column-major as
// cuBLAS sees it (our row-major tensors are their transposes). A and B share
// `ab_type`; C is `c_type` (the dtype, or float32 for an accumulator).
// Returns a cudaError_t as int.
int gemm_batched(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m,
                 int n, int k, float alpha, void* const* a, int64_t lda, void* const* b,
                 int64_t ldb, float beta, void* const* c, int64_t ldc, int count,
                 cudaDataType_t ab_type, cudaDataType_t c_type);

inline int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Elements of one score-shaped buffer (S, P, dP or dS) over all batch * heads.
inline int64_t score_elems(const AttnParams& p) {
  return int64_t(p.batch) * p.heads * p.seqlen_q * p.seqlen_k;
}

}  // namespace fa
