// Stands in for counters.cu when fa-bench is built with FA_BENCH_CUDA=OFF.
#include "measure/counters.h"

namespace fa {

std::optional<DramCounts> measure_dram_bytes(const std::function<void()>& /*launch*/,
                                             std::string* why) {
  if (why) *why = "built without CUDA";
  return std::nullopt;
}

}  // namespace fa
