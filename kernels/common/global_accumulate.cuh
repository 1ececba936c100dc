// Float32 accumulation into global memory shared by many CTAs.
//
// red_add_v2: two adjacent floats added by one vector reduction (sm_90), which
// returns nothing to the SM. (atomicAdd(float2*) compiles to the returning ATOMG
// form in a kernel that also has a __threadfence, as the turn-taking below does.)
//
// Turn-taking, so the additions land in a fixed order and two runs give identical
// bits: a counter in global memory (zeroed before the launch) holds the number of
// turns taken; a CTA waits until it equals its own turn, adds, then passes the
// turn on. Only lower turns are waited for, and the caller makes sure that the
// CTAs holding them are already running (fa1_bwd.cuh: turns follow a ticket each
// CTA takes on arrival), so no CTA waits for one that has not started.
#pragma once

namespace fa {

__device__ __forceinline__ void red_add_v2(float* addr, float x, float y) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(addr), "f"(x), "f"(y) : "memory");
}

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
