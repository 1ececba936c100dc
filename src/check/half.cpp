#include "check/half.h"

#include <bit>
#include <cmath>

namespace fa {

uint16_t float_to_bf16_bits(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return uint16_t((u >> 16) | 0x0040);  // keep it a quiet NaN
  // Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry into
  // the exponent is the correct result (rounds up to the next binade or inf).
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

uint16_t float_to_f16_bits(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // inf or NaN
    return uint16_t(sign | 0x7C00u | (abs > 0x7F800000u ? 0x0200u : 0u));
  int exp = int(abs >> 23) - 127;  // unbiased
  uint32_t mant = abs & 0x7FFFFFu;
  if (exp > 15) return uint16_t(sign | 0x7C00u);  // overflow
  if (exp >= -14) {
    // Normal half: keep 10 mantissa bits, round the 13 dropped ones to even.
    uint32_t h = (uint32_t(exp + 15) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into inf: correct
    return uint16_t(sign | h);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: +-0
  // Subnormal half: value = m * 2^-24 with m = round(full_mant * 2^(exp+24-23)).
  uint32_t full = mant | 0x800000u;
  // value = full * 2^(exp-23) and a half subnormal counts units of 2^-24, so the
  // half mantissa is full * 2^(exp+1): drop -exp-1 bits (14..24), rounding to even.
  int shift = -exp - 1;
  uint32_t h = full >> shift;
  uint32_t rest = full & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

float f16_bits_to_float(uint16_t b) {
  uint32_t sign = uint32_t(b & 0x8000u) << 16;
  uint32_t exp = (b >> 10) & 0x1Fu;
  uint32_t mant = b & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);  // subnormal or zero
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace fa
