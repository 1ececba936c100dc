// Bytes a kernel run moves to and from HBM: modelled (src/measure/traffic.h),
// counted by the CPU kernels, or read from the GPU's counters.
#pragma once
#include <cstdint>

namespace fa {

struct Traffic {
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
  int64_t total() const { return read_bytes + write_bytes; }
  Traffic& operator+=(const Traffic& o) {
    read_bytes += o.read_bytes;
    write_bytes += o.write_bytes;
    return *this;
  }
};

}  // namespace fa
