// CTAs taking turns at a shared accumulator, so float32 additions land in a fixed
// order and two runs give identical bits: a counter in global memory (zeroed
// before the launch) holds the number of turns taken; a CTA waits until it equals
// its own turn, adds, then passes the turn on. Only the lower turns may be waited
// for, and CTAs are dispatched in grid order, so the waited-for CTA is already
// running: no deadlock.
#pragma once

namespace fa {

// One thread of the CTA waits; a __syncthreads() after it holds the others.
__device__ __forceinline__ void wait_turn(const int* counter, int turn) {
  int now;
  while (true) {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(now) : "l"(counter) : "memory");
    if (now == turn) return;
    __nanosleep(64);
  }
}

// Call from one thread after a __threadfence() by every thread that added and a
// __syncthreads(): their additions are visible before the next turn starts.
__device__ __forceinline__ void pass_turn(int* counter, int next) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(counter), "r"(next) : "memory");
}

}  // namespace fa
