// 2^x on the FMA pipe: a cubic on the fraction and the integer part placed in
// the exponent field. A softmax block's exponentials all go to the MUFU unit
// (16 per SM per clock, a warp instruction every 8 clocks per SM sub-partition)
// while the FMA pipe has room; a kernel computing some of them here shortens
// the stretch in which MUFU alone sets the pace (PERF_NOTES
// fa3-fp8-exp2-on-fma). Host and device, so CPU tests check it bit for bit
// against the same code.
//
// Domain: x <= 0, the softmax's exponents. Values below -125 give 2^-125 (so
// -inf, a masked score, gives 2^-125 rather than 0: far below any e4m3 or bf16
// P and below what a row sum of at least 1 can hold); NaN stays NaN. Relative
// error at most 7.6e-5 (the cubic's, fitted on [-1/2, 1/2], evaluated in
// float: tests/test_exp2_poly.cpp), against ex2.approx's 2^-22.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FA_EXP2_HD __host__ __device__ __forceinline__
#else
#define FA_EXP2_HD inline
#endif

namespace fa {

namespace exp2_poly_detail {
// A float's bits and back: memcpy, which nvcc turns into a register move.
FA_EXP2_HD uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
FA_EXP2_HD float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// max(x, lo) that keeps NaN (fmaxf would return lo).
FA_EXP2_HD float max_keep_nan(float x, float lo) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(lo));
  return y;
#else
  return x != x ? x : (x < lo ? lo : x);
#endif
}
}  // namespace exp2_poly_detail

// Coefficients of 2^f ~ c0 + f (c1 + f (c2 + f c3)) on [-1/2, 1/2], fitted for
// the smallest largest relative error.
inline constexpr float kExp2C0 = 0.9999281764030457f, kExp2C1 = 0.693260908126831f,
                       kExp2C2 = 0.24260908365249634f, kExp2C3 = 0.05517083406448364f;

FA_EXP2_HD float exp2_poly(float x) {
  using namespace exp2_poly_detail;
  x = max_keep_nan(x, -125.f);
  // 1.5 * 2^23: adding it rounds x to the nearest integer j, held in t's low
  // mantissa bits (two's complement for j < 0); subtracting it gives j as a float.
  const float t = x + 12582912.f;
  const float j = t - 12582912.f;
  const float f = x - j;  // in [-1/2, 1/2]
  const float p = fmaf(fmaf(fmaf(kExp2C3, f, kExp2C2), f, kExp2C1), f, kExp2C0);  // one rounding each, both sides
  // 2^j as a float: j's low bits shifted into the exponent field, plus the bias.
  const float scale = bits_to_float((float_to_bits(t) << 23) + 0x3f800000u);
  return p * scale;  // NaN stays NaN through the multiply
}

}  // namespace fa

#undef FA_EXP2_HD
