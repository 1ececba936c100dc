// Stands in for standard_gpu.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "check/standard_gpu.h"

#include "core/errors.h"

namespace fa {

StandardRows standard_forward_gpu(const AttnProblem&, const DeviceInputs&, const std::vector<int64_t>&) {
  throw KernelError("the GPU standard needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

ErrorMetrics standard_errors_gpu(const AttnProblem&, const DeviceInputs&, const DeviceReference&) {
  throw KernelError("the GPU standard needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

}  // namespace fa
