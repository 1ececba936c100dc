// setmaxnreg: hand registers from the producer warpgroup to the consumers.
// Only honoured when the kernel has a register cap at entry
// (__launch_bounds__(threads, 1)) and each role is one branch of a single
// if/else; otherwise ptxas ignores it and says so (warning C7508).
#pragma once
#include "common/sm90/arch.cuh"

namespace fa::sm90 {

template <int Regs>
__device__ __forceinline__ void regs_release() {
#if FA_SM90A_ENABLED
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

template <int Regs>
__device__ __forceinline__ void regs_acquire() {
#if FA_SM90A_ENABLED
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

}  // namespace fa::sm90
