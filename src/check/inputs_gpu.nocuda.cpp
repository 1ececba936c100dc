// Stands in for inputs_gpu.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "check/inputs_gpu.h"

#include "core/errors.h"

namespace fa {

void generate_inputs_gpu(const AttnProblem&, Distribution, uint64_t, const InputTargets&) {
  throw KernelError("generating inputs on the device needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

bool inputs_gpu_built() { return false; }

}  // namespace fa
