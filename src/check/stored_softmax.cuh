// The softmax of one row of S as the tolerance rules' standards compute it on
// the device, in the kernel's stored precision (check/standard_gpu.cu for the
// forward, check/standard_bwd_gpu.cu for the backward; check/metrics.cpp and
// check/standard_bwd.cpp take the same steps on the host): one definition, so
// the forward's P and the backward's cannot come apart. CUDA only.
#pragma once
#include <cmath>
#include <cstdint>

#include "reference/gpu_rows.cuh"

namespace fa {

struct StoredSoftmax {
  float m, l;  // the row's maximum of s and float32 sum of exp(s - m), in every thread
};

// By one block over the row's first n > 0 entries, in place:
//   s = round(S * scale), m = max s, l = sum exp(s - m), P = round(exp(s - m) / l)
// with round the dtype's (bf16 or fp16) and everything else float32. Thread t
// handles entries t, t + blockDim.x, ...: a caller that then reads back only
// those needs no barrier beyond the reductions'. shm: 32 floats.
__device__ inline StoredSoftmax stored_softmax_row(float* row, int64_t n, float scale, bool bf16, float* shm) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    row[j] = gpurows::round_stored(row[j] * scale, bf16);  // S stored in the dtype
    m = gpurows::max_keep_nan(m, row[j]);
  }
  m = gpurows::block_reduce(m, true, shm);
  float l = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    row[j] = expf(row[j] - m);
    l += row[j];
  }
  l = gpurows::block_reduce(l, false, shm);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) row[j] = gpurows::round_stored(row[j] / l, bf16);  // P stored
  return StoredSoftmax{m, l};
}

}  // namespace fa
