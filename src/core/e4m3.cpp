#include "core/e4m3.h"

#include <bit>
#include <cmath>

namespace fa {

namespace {
constexpr uint8_t kMaxCode = 0x7E;  // 0.1111.110 = 448
constexpr uint8_t kNanCode = 0x7F;  // 0.1111.111
constexpr int kBias = 7;
constexpr int kMinNormalExp = 1 - kBias;  // 2^-6
constexpr uint32_t kMaxBits = 0x43E00000u;        // 448 as a float
constexpr uint32_t kMinNormalBits = 0x3C800000u;  // 2^-6 as a float
}  // namespace

double e4m3_ulp(double x) {
  const double a = std::fabs(x);
  if (a < std::ldexp(1.0, kMinNormalExp)) return std::ldexp(1.0, kMinNormalExp - 3);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the binade is [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 3);
}

// Both directions work on the float's bits: the FP8 standard (check/metrics.cpp)
// rounds every probability and output it checks through them, and the input
// quantizer every element, so the frexp / ldexp form they replaced (the same
// codes) took a quarter of an e4m3 sweep's reference time in libm.
uint8_t encode_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint8_t sign = uint8_t((bits >> 24) & 0x80u);
  const uint32_t u = bits & 0x7FFFFFFFu;  // |x|
  if (u > 0x7F800000u) return sign | kNanCode;
  if (u >= kMaxBits) return sign | kMaxCode;  // |x| >= 448, infinity included: saturate
  unsigned code;
  if (u < kMinNormalBits) {
    // Below 2^-6 the codes count units of 2^-9: |x| * 2^9 (exact) is below 8, and
    // adding 2^23 leaves the integer nearest to it, ties to even (the default
    // rounding mode), in the sum's low mantissa bits.
    const float units = std::bit_cast<float>(u) * 0x1p9f;
    code = std::bit_cast<uint32_t>(units + 0x1p23f) - 0x4B000000u;
  } else {
    // Codes of normal values are the float's exponent field (rebiased) and the
    // top 3 of its 23 mantissa bits, rounded to nearest, ties to even, at bit 20:
    // a mantissa that rounds up to 8 carries into the exponent field, which is
    // the next binade's first code.
    const uint32_t rounded = (u + 0x7FFFFu + ((u >> 20) & 1u)) >> 20;
    code = rounded - ((127u - kBias) << 3);
  }
  return sign | uint8_t(code > kMaxCode ? kMaxCode : code);
}

float decode_e4m3(uint8_t c) {
  const uint32_t exp = (c >> 3) & 0xFu, man = c & 7u, sign = uint32_t(c & 0x80u) << 24;
  if (exp == 0xF && man == 7) return std::bit_cast<float>(sign | 0x7FC00000u);  // NaN of the code's sign
  if (exp == 0) return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(float(man) * 0x1p-9f));
  return std::bit_cast<float>(sign | (exp + 127u - kBias) << 23 | man << 20);
}

std::vector<float> dequantize_e4m3(const std::vector<uint8_t>& codes, float descale) {
  std::vector<float> out(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) out[i] = decode_e4m3(codes[i]) * descale;
  return out;
}

}  // namespace fa
