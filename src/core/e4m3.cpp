#include "core/e4m3.h"

#include <cmath>

namespace fa {

namespace {
constexpr uint8_t kMaxCode = 0x7E;  // 0.1111.110 = 448
constexpr uint8_t kNanCode = 0x7F;  // 0.1111.111
constexpr int kBias = 7;
constexpr int kMinNormalExp = 1 - kBias;  // 2^-6
}  // namespace

double e4m3_ulp(double x) {
  const double a = std::fabs(x);
  if (a < std::ldexp(1.0, kMinNormalExp)) return std::ldexp(1.0, kMinNormalExp - 3);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the binade is [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 3);
}

uint8_t encode_e4m3(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | kNanCode;
  const double a = std::fabs(double(x));
  if (a >= kE4m3Max) return sign | kMaxCode;
  // Codes of non-negative values increase with the value, and within a binade
  // (and across the subnormal range) they are consecutive: the code is the
  // value in units of its binade's spacing, offset by the binade. nearbyint
  // rounds ties to even in the default rounding mode, and a mantissa that
  // rounds up to 16 carries into the next binade by the same formula.
  // Every float is exact in double, and the scaling below is by powers of two.
  unsigned code;
  if (a < std::ldexp(1.0, kMinNormalExp)) {
    code = unsigned(std::nearbyint(std::ldexp(a, 9)));  // 0..8; 8 is 2^-6, the first normal
  } else {
    int e = 0;
    std::frexp(a, &e);
    const int exp = e - 1;  // a in [2^exp, 2^(exp+1))
    const unsigned m = unsigned(std::nearbyint(std::ldexp(a, 3 - exp)));  // 8..16
    code = unsigned(exp + kBias) * 8u + (m - 8u);
  }
  return sign | uint8_t(code > kMaxCode ? kMaxCode : code);
}

float decode_e4m3(uint8_t c) {
  const int exp = (c >> 3) & 0xF, man = c & 7;
  const float sign = (c & 0x80) ? -1.0f : 1.0f;
  if (exp == 0xF && man == 7) return std::copysign(std::nanf(""), sign);
  if (exp == 0) return sign * std::ldexp(float(man), kMinNormalExp - 3);
  return sign * std::ldexp(float(8 + man), exp - kBias - 3);
}

std::vector<float> dequantize_e4m3(const std::vector<uint8_t>& codes, float descale) {
  std::vector<float> out(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) out[i] = decode_e4m3(codes[i]) * descale;
  return out;
}

}  // namespace fa
