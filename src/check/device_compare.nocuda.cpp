// Stands in for device_compare.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "check/device_compare.h"

#include "core/errors.h"

namespace fa {

ErrorMetrics compare_outputs_gpu(const AttnProblem&, const DeviceOutputs&, const DeviceReference&) {
  throw KernelError("comparing on the device needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

GradComparison compare_grads_gpu(const AttnProblem&, const DeviceGradOutputs&, const DeviceGrads&) {
  throw KernelError("comparing on the device needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

DeviceSnapshot::DeviceSnapshot(const void*, size_t) {
  throw KernelError("a device snapshot needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

bool DeviceSnapshot::same_bits(const void*) const {
  throw KernelError("a device snapshot needs a build with CUDA (FA_BENCH_CUDA=ON)");
}

}  // namespace fa
