// Stands in for cuda_executor.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "measure/executor.h"

namespace fa {

std::unique_ptr<Executor> make_cuda_executor(int /*device*/, std::string* why) {
  if (why) *why = "fa-bench was built without CUDA (FA_BENCH_CUDA=OFF)";
  return nullptr;
}

int cuda_device_count(std::string* why) {
  if (why) *why = "fa-bench was built without CUDA (FA_BENCH_CUDA=OFF)";
  return 0;
}

}  // namespace fa
