// Division by a run-time constant without a divide instruction: a multiply-high,
// an add and a shift (the round-up method of Granlund and Montgomery). The GPU
// has no integer divider; `n / d` with d unknown at compile time costs about 20
// instructions, a MUFU.RCP among them. The fa3 forward's tile walk divides
// several times per tile, which at 512 tokens (one to four K/V blocks per tile)
// was a visible share of the instructions (PERF_NOTES fa3-short-fast-div).
// No CUDA types: the host builds the divisor, host and device divide, CPU tests
// check it against '/'.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FA_FAST_DIV_FN __host__ __device__ __forceinline__
#else
#define FA_FAST_DIV_FN inline
#endif

namespace fa {

// Divides a non-negative int n < 2^31 by d >= 1 (the divisor it was built for).
struct FastDiv {
  int32_t d = 1;
  uint32_t mul = 1;  // ceil-style multiplier: 2^32 (2^shift - d) / d + 1, below 2^32
  uint32_t shift = 0;  // ceil(log2 d)

  FastDiv() = default;
  explicit FastDiv(int32_t divisor) : d(divisor > 0 ? divisor : 1) {
    uint32_t s = 0;
    while ((uint64_t(1) << s) < uint64_t(d)) ++s;
    shift = s;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << s) - uint64_t(d))) / uint64_t(d) + 1);
  }

  // n / d for 0 <= n < 2^31: q = (umulhi(n, mul) + n) >> shift. The sum stays
  // below 2^32 because umulhi(n, mul) < n < 2^31.
  FA_FAST_DIV_FN int32_t div(int32_t n) const {
    const uint32_t un = uint32_t(n);
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(un, mul);
#else
    const uint32_t hi = uint32_t((uint64_t(un) * mul) >> 32);
#endif
    return int32_t((hi + un) >> shift);
  }
  // n % d, given q = div(n).
  FA_FAST_DIV_FN int32_t mod(int32_t n, int32_t q) const { return n - q * d; }
};

}  // namespace fa
