// Stands in for gpu_forward.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "core/errors.h"
#include "reference/gpu_forward.h"

namespace fa::gpurows {

DeviceReference forward_f64(const AttnProblem&, const DeviceInputs&, std::vector<int64_t>, const std::vector<int64_t>&,
                            int64_t) {
  throw KernelError("the GPU reference needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

}  // namespace fa::gpurows

namespace fa {
bool gpu_reference_built() { return false; }
ReferenceOutputs DeviceReference::to_host(const AttnProblem&) const {
  throw KernelError("the GPU reference needs a build with CUDA (FA_BENCH_CUDA=ON)");
}
}  // namespace fa
