// Programmatic dependent launch (sm_90): a kernel launched with
// launch_after_primary may start while the kernel before it in the stream
// still runs, once every block of that one has called griddep_launch_dependents
// (or exited); it must call griddep_wait before it touches what that kernel
// writes. Used where a memory-bound kernel feeds a long one that cannot share an
// SM with it: the dependent's blocks take the SMs as they drain, and run their
// prologue and the loads that do not depend on the first kernel meanwhile.
#pragma once
#include <cuda_runtime.h>

#include <utility>

namespace fa::sm90 {

// The dependent grid may launch once every block of this one has passed here.
__device__ __forceinline__ void griddep_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Waits until the grid this one depends on has completed and its writes are
// visible; returns at once in a grid launched without the dependency.
__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// kernel<<<grid, threads, smem, stream>>>(args...), allowed to overlap the
// kernel before it in `stream` as described above.
template <typename... Params, typename... Args>
cudaError_t launch_after_primary(void (*kernel)(Params...), dim3 grid, dim3 threads, size_t smem,
                                 cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = threads;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace fa::sm90
