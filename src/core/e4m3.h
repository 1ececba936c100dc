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

// Round to nearest, ties to even, as the GPU's cvt.rn.satfinite does, so the
// codes the host makes are those a device conversion would make. Saturating:
// finite values (and +-inf) beyond 448 give +-448, never NaN. The format has no
// infinity, so an overflow would otherwise become NaN and poison every score
// it touches; the quantizer maps amax to 448, so only rounding of the scale
// can push a value past it. NaN gives the NaN code of its sign.
uint8_t encode_e4m3(float);
float decode_e4m3(uint8_t);  // exact: every code is a float

// decode_e4m3(encode_e4m3(x)) for every float x, without the code: the FP8
// standard (check/metrics.cpp) rounds each probability it checks through this,
// and inline on the float's bits, with selects for the special cases, its loops
// vectorize. Normal values keep the exponent and the top 3 mantissa bits rounded
// to nearest even at bit 20 (a carry is the next binade's first value), clamped
// to 448; below 2^-6 the nearest multiple of 2^-9, ties to even (adding 2^23 to
// |x| * 2^9 rounds it in the default mode); NaN the quiet NaN of its sign.
inline float round_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = bits & 0x80000000u, u = bits & 0x7FFFFFFFu;
  const uint32_t normal = std::min((u + 0x7FFFFu + ((u >> 20) & 1u)) >> 20 << 20, 0x43E00000u);  // 448 at most
  const float units = std::bit_cast<float>(u) * 0x1p9f;
  const uint32_t sub = std::bit_cast<uint32_t>(((units + 0x1p23f) - 0x1p23f) * 0x1p-9f);
  const uint32_t mag = u > 0x7F800000u ? 0x7FC00000u : u < 0x3C800000u ? sub : normal;  // NaN; below 2^-6
  return std::bit_cast<float>(sign | mag);
}

// The spacing of e4m3 values at magnitude |x| (x finite, |x| <= 448): 2^-9 for
// subnormals, 2^(e-3) in the binade [2^e, 2^(e+1)).
double e4m3_ulp(double x);

// An e4m3 tensor written with one scale (code = encode(value * scale), as
// cuDNN's FP8 forward writes O): each code's value times `descale`, 1 / scale.
std::vector<float> dequantize_e4m3(const std::vector<uint8_t>& codes, float descale);

}  // namespace fa
