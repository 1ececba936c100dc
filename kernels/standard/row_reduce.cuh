// The CTA-wide reduction of the standard attention's row kernels (one CTA per
// score row): the forward's softmax max and sum, the backward's D = rowsum(dO o O).
#pragma once
#include <cuda_runtime.h>

namespace fa {

// Max or sum of v over the CTA's Threads threads; every thread gets the result.
// `scratch` holds Threads / 32 floats.
template <int Threads>
__device__ __forceinline__ float block_reduce(float v, bool is_max, float* scratch) {
  static_assert(Threads % 32 == 0, "whole warps");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffff, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  __syncthreads();  // scratch may still be read from the previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int i = 1; i < Threads / 32; ++i) v = is_max ? fmaxf(v, scratch[i]) : v + scratch[i];
  return v;
}

}  // namespace fa
