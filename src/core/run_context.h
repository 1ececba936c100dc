#pragma once
#include <cstdint>

namespace fa {

// What a kernel run gets besides its tensors, and may report back.
struct RunContext {
  void* stream = nullptr;           // cudaStream_t for cuda kernels
  int64_t counted_read_bytes = -1;  // CPU kernels count what they move (at the
  int64_t counted_write_bytes = -1; // problem dtype's size); -1 = not counted
  int threads = 0;                  // cpu kernels: worker threads; <= 0 = hardware concurrency
  // cpu kernels: bytes per Q/K/V/O/S/P element to count at, i.e. the problem
  // dtype's size (their buffers are float32 whatever the dtype); 0 = 4.
  int elem_bytes = 0;
};

}  // namespace fa
