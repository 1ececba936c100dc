// DRAM traffic from the GPU's hardware counters (CUPTI range profiler:
// dram__bytes_read.sum, dram__bytes_write.sum, L2 hit rate), in a pass that is
// not timed. Implemented in counters.cu (cuda builds) / counters.nocuda.cpp.
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace fa {

struct DramCounts {
  double read_bytes = 0, write_bytes = 0;
  double l2_hit_rate = -1;  // percent, -1 if not read
};

// Runs `launch` (which enqueues work on the current device's default or given
// stream and returns) under the profiler and returns the bytes it moved.
// nullopt with `why` set when counters cannot be read (no permission, no CUPTI).
std::optional<DramCounts> measure_dram_bytes(const std::function<void()>& launch, std::string* why);

}  // namespace fa
