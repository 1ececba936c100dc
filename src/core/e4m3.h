// OCP FP8 E4M3FN on the host: 1 sign, 4 exponent (bias 7), 3 mantissa bits.
// No infinities; the one NaN per sign is S.1111.111, so the largest finite
// magnitude is 1.75 * 2^8 = 448. Subnormals (exponent field 0) are multiples of
// 2^-9 below 2^-6.
#pragma once
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

// The spacing of e4m3 values at magnitude |x| (x finite, |x| <= 448): 2^-9 for
// subnormals, 2^(e-3) in the binade [2^e, 2^(e+1)).
double e4m3_ulp(double x);

// An e4m3 tensor written with one scale (code = encode(value * scale), as
// cuDNN's FP8 forward writes O): each code's value times `descale`, 1 / scale.
std::vector<float> dequantize_e4m3(const std::vector<uint8_t>& codes, float descale);

}  // namespace fa
