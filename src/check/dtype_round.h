// Float32 values rounded to bf16 / fp16 (round to nearest even), bit for bit
// what check/half.h gives, but branch-free and inline so a loop over an array
// vectorises: the gradient tolerance rule rounds seqlen^2 scores per head.
#pragma once
#include <bit>
#include <cstdint>

#include "core/types.h"

namespace fa {

inline float round_bf16_inline(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  // Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry into
  // the exponent is the correct result (the next binade, or inf).
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  const bool nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return std::bit_cast<float>(nan ? (u | 0x00400000u) & 0xFFFF0000u : rounded);
}

inline float round_f16_inline(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t sign = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  // Normal halves (|x| >= 2^-14): keep 10 of float's 23 mantissa bits, ties to
  // even; at or past 2^16 after rounding (65504 is the largest half) it is inf.
  // (Unsigned arithmetic: it wraps for NaN inputs, which take another branch.)
  const uint32_t normal = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
  // Subnormal halves are multiples of 2^-24, the spacing of floats in [0.5, 1):
  // |x| + 0.5 rounds |x| to that grid (ties to even) and - 0.5 is exact.
  const uint32_t sub = std::bit_cast<uint32_t>((std::bit_cast<float>(a) + 0.5f) - 0.5f);
  // The selects compare |x| as int32 (all values below 2^31), which vectorises.
  const int32_t ai = int32_t(a), ni = int32_t(normal & 0x7FFFFFFFu);
  uint32_t r = ai < 0x38800000 ? sub : ni >= 0x47800000 ? 0x7F800000u : normal;  // 2^-14, 2^16
  r = ai > 0x7F800000 ? 0x7FC00000u : ai == 0x7F800000 ? a : r;  // NaN -> quiet NaN; inf stays
  return std::bit_cast<float>(r | sign);
}

// x[0..n) rounded in place to the dtype (fp32: unchanged).
inline void round_in_place(float* x, int64_t n, DType dtype) {
  if (dtype == DType::bf16)
    for (int64_t i = 0; i < n; ++i) x[i] = round_bf16_inline(x[i]);
  else if (dtype == DType::f16)
    for (int64_t i = 0; i < n; ++i) x[i] = round_f16_inline(x[i]);
}

inline float round_value(float x, DType dtype) {
  return dtype == DType::bf16 ? round_bf16_inline(x) : dtype == DType::f16 ? round_f16_inline(x) : x;
}

}  // namespace fa
