// Named barriers 1..15 (0 is __syncthreads): a subset of a CTA's warps meets
// without stopping the others. `threads` is the number of threads taking part,
// a multiple of the warp size. Used by fa3's ping-pong and by fa1's row groups.
#pragma once

namespace fa {

__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace fa
