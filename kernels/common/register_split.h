// Whether a warp-specialized block's setmaxnreg split fits (sm_90: a producer
// warpgroup and consumer warpgroups, one block per SM). Every fa3 traits
// checks its split against it.
#pragma once

namespace fa {

// Registers per thread a block of `threads` holds at launch under
// __launch_bounds__(threads, 1): the 64K register file over its threads,
// rounded down to the allocation granule of 8 (168 for 384 threads, 128 for
// 512), at most 256. ptxas takes them all in these kernels.
constexpr int launch_regs_per_thread(int threads) {
  const int r = 65536 / threads / 8 * 8;
  return r < 256 ? r : 256;
}

// setmaxnreg.inc waits until other warpgroups have released enough registers,
// so a split over the launch allocation (not over the register file) hangs the
// consumers: a producer at 32 beside two consumers at 240 did (16 more than
// the 3 x 168 a 384-thread block holds).
constexpr bool register_split_fits(int consumer_wgs, int producer_regs, int consumer_regs) {
  return producer_regs + consumer_regs * consumer_wgs <=
         launch_regs_per_thread(128 * (consumer_wgs + 1)) * (consumer_wgs + 1);
}

}  // namespace fa
