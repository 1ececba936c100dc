// CHECK_CUDA for the standalone GPU programs that report failures by
// exception (counters_check, cudnn_check): throws with file, line, call and
// CUDA's error text.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define CHECK_CUDA(call)                                                                       \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess)                                                                     \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                               #call + ": " + cudaGetErrorString(e_));                         \
  } while (0)
