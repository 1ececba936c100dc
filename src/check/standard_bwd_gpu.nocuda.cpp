// Stands in for standard_bwd_gpu.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "check/standard_bwd_gpu.h"

#include "core/errors.h"

namespace fa {

HostGrads standard_backward_gpu(const AttnProblem&, const DeviceInputs&) {
  throw KernelError("the GPU standard needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

GradComparison standard_grad_errors_gpu(const AttnProblem&, const DeviceInputs&, const DeviceGrads&) {
  throw KernelError("the GPU standard needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

}  // namespace fa
