// The CPU back end's knobs beyond make_cpu_executor(threads) in executor.h.
#pragma once
#include <cstdint>
#include <memory>

#include "measure/executor.h"

namespace fa {

// Half the machine's physical RAM: a sweep that asks for more reports `oom`
// rows instead of driving the host into swap.
int64_t default_cpu_mem_limit();

// mem_limit_bytes <= 0 means default_cpu_mem_limit().
std::unique_ptr<Executor> make_cpu_executor(int threads, int64_t mem_limit_bytes);

}  // namespace fa
