// OCP FP8 E4M3FN on the host: 1 sign, 4 exponent (bias 7), 3 mantissa bits.
// No infinities; the one NaN per sign is S.1111.111, so the largest finite
// magnitude is 1.75 * 2^8 = 448. Subnormals (exponent field 0) are multiples of
// 2^-9 below 2^-6.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace fa {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr uint32_t kE4m3Bias = 7;  // the exponent field's bias

// Round to nearest, ties to even, as the GPU's cvt.rn.satfinite does, so the
// codes the host makes are those a device conversion would make. Saturating:
// finite values (and +-inf) beyond 448 give +-448, never NaN. The format has no
// infinity, so an overflow would otherwise become NaN and poison every score
// it touches; the quantizer maps amax to 448, so only rounding of the scale
// can push a value past it. NaN gives the NaN code of its sign.
//
// Both directions work on the float's bits, inline and with selects instead of
// branches, so that loops over them vectorize: the input quantizer encodes every
// element and the FP8 standard (check/metrics.cpp) rounds every probability and
// output it checks (round_e4m3). The frexp / ldexp form they replaced (the same
// codes) took a quarter of an e4m3 sweep's reference time in libm.
inline uint8_t encode_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (bits >> 24) & 0x80u, u = bits & 0x7FFFFFFFu;  // |x|
  // Codes of normal values are the float's exponent field (rebiased) and the
  // top 3 of its 23 mantissa bits, rounded to nearest, ties to even, at bit 20:
  // a mantissa that rounds up to 8 carries into the exponent field, which is the
  // next binade's first code. |x| >= 448, infinity included, saturates to 0x7E.
  const uint32_t normal = std::min(((u + 0x7FFFFu + ((u >> 20) & 1u)) >> 20) - ((127u - kE4m3Bias) << 3), 0x7Eu);
  // Below 2^-6 the codes count units of 2^-9: |x| * 2^9 (exact) is below 8, and
  // adding 2^23 leaves the integer nearest to it, ties to even (the default
  // rounding mode), in the sum's low mantissa bits.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(u) * 0x1p9f + 0x1p23f) - 0x4B000000u;
  const uint32_t code = u > 0x7F800000u ? 0x7Fu : u < 0x3C800000u ? sub : normal;  // NaN; below 2^-6
  return uint8_t(sign | code);
}

inline float decode_e4m3(uint8_t c) {  // exact: every code is a float
  const uint32_t exp = (c >> 3) & 0xFu, man = c & 7u, sign = uint32_t(c & 0x80u) << 24;
  const uint32_t normal = (exp + 127u - kE4m3Bias) << 23 | man << 20;
  const uint32_t sub = std::bit_cast<uint32_t>(float(man) * 0x1p-9f);
  const uint32_t mag = exp == 0xF && man == 7 ? 0x7FC00000u : exp == 0 ? sub : normal;  // NaN of the code's sign
  return std::bit_cast<float>(sign | mag);
}

// x rounded to the nearest e4m3 value: the round trip through its code.
inline float round_e4m3(float x) { return decode_e4m3(encode_e4m3(x)); }

// The spacing of e4m3 values at magnitude |x| (x finite, |x| <= 448): 2^-9 for
// subnormals, 2^(e-3) in the binade [2^e, 2^(e+1)).
double e4m3_ulp(double x);

// An e4m3 tensor written with one scale (code = encode(value * scale), as
// cuDNN's FP8 forward writes O): each code's value times `descale`, 1 / scale.
std::vector<float> dequantize_e4m3(const std::vector<uint8_t>& codes, float descale);

}  // namespace fa
