// cuBLAS plumbing of the standard attention (standard_glue.h).
#include "standard/standard_glue.h"

#include <map>

namespace fa {

int cublas_to_cuda(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return int(cudaSuccess);
    case CUBLAS_STATUS_ALLOC_FAILED: return int(cudaErrorMemoryAllocation);
    case CUBLAS_STATUS_NOT_SUPPORTED: return int(cudaErrorNotSupported);
    case CUBLAS_STATUS_INVALID_VALUE: return int(cudaErrorInvalidValue);
    default: return int(cudaErrorUnknown);
  }
}

int cublas_bind(cudaStream_t stream, cublasHandle_t* handle) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return int(e);
  thread_local std::map<int, cublasHandle_t> handles;
  auto it = handles.find(device);
  if (it == handles.end()) {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return int(cudaErrorInitializationError);
    it = handles.emplace(device, h).first;
  }
  *handle = it->second;
  return cublas_to_cuda(cublasSetStream(*handle, stream));
}

int gemm_batched(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m,
                 int n, int k, float alpha, void* const* a, int64_t lda, void* const* b,
                 int64_t ldb, float beta, void* const* c, int64_t ldc, int count,
                 cudaDataType_t ab_type, cudaDataType_t c_type) {
  // cuBLAS takes one array type for inputs and outputs; inputs are only read.
  return cublas_to_cuda(cublasGemmBatchedEx(
      handle, op_a, op_b, m, n, k, &alpha, const_cast<const void* const*>(a), ab_type, int(lda),
      const_cast<const void* const*>(b), ab_type, int(ldb), &beta, c, c_type, int(ldc), count,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace fa
