// CUDA error checks for kernel glue code. Launch functions return a cudaError_t
// (as int) instead of throwing, so the host tool decides what an error means;
// these macros return early with the first failure.
#pragma once
#include <cuda_runtime.h>

// Returns the error of `call` from the enclosing function (which returns int).
#define FA_CUDA_RETURN_IF_ERROR(call)                   \
  do {                                                  \
    cudaError_t fa_err_ = (call);                       \
    if (fa_err_ != cudaSuccess) return int(fa_err_);    \
  } while (0)

// After a <<<>>> launch: the launch error (bad configuration, too much shared
// memory), not an error of the kernel's execution, which shows at the next sync.
#define FA_CUDA_RETURN_LAUNCH_ERROR() FA_CUDA_RETURN_IF_ERROR(cudaGetLastError())

namespace fa {

// Opt a kernel in to more than 48 KiB of dynamic shared memory (needed once per
// kernel and device; cheap enough to repeat per launch).
template <typename KernelFn>
inline cudaError_t set_max_dynamic_smem(KernelFn kernel, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

}  // namespace fa
