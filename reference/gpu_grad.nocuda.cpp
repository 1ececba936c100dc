// Stands in for gpu_grad.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "core/errors.h"
#include "reference/gpu_grad.h"

namespace fa::gpurows {

DeviceGrads backward_f64(const AttnProblem&, const DeviceInputs&, std::vector<int64_t>, std::vector<int64_t>,
                         const std::vector<int64_t>&, int64_t) {
  throw KernelError("the GPU reference needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

}  // namespace fa::gpurows

namespace fa {
SampledGrads DeviceGrads::to_host(const AttnProblem&) const {
  throw KernelError("the GPU reference needs a build with CUDA (FA_BENCH_CUDA=ON)");
}
}  // namespace fa
