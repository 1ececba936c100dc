// The back end a program runs on, chosen once for fa-bench sweep, fa-check and
// fa-gbench alike: --backend auto|cpu|cuda.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "measure/executor.h"

namespace fa::cli {

// cpu: the CPU executor (threads <= 0: all; cpu_mem_limit <= 0: half the RAM).
// cuda: device 0, or a UsageError saying why there is none. auto: cuda where a
// device is present, else cpu; either way it says on stderr which it took and why.
// Another name is a UsageError.
std::unique_ptr<Executor> pick_executor(const std::string& program, const std::string& backend, int threads,
                                        int64_t cpu_mem_limit);

}  // namespace fa::cli
