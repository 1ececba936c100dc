#include "core/e4m3.h"

#include <cmath>

namespace fa {

namespace {
constexpr int kMinNormalExp = 1 - int(kE4m3Bias);  // 2^-6
}  // namespace

double e4m3_ulp(double x) {
  const double a = std::fabs(x);
  if (a < std::ldexp(1.0, kMinNormalExp)) return std::ldexp(1.0, kMinNormalExp - 3);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the binade is [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 3);
}

std::vector<float> dequantize_e4m3(const std::vector<uint8_t>& codes, float descale) {
  std::vector<float> out(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) out[i] = decode_e4m3(codes[i]) * descale;
  return out;
}

}  // namespace fa
