// Host-side float16 / bfloat16 conversions (round-to-nearest-even), written
// here so inputs, .npy files and the tolerance rule round exactly like the GPU.
#pragma once
#include <cstdint>

namespace fa {

uint16_t float_to_f16_bits(float);   // RNE; overflow -> +-inf; subnormals kept
float f16_bits_to_float(uint16_t);
uint16_t float_to_bf16_bits(float);  // RNE; NaN stays NaN
float bf16_bits_to_float(uint16_t);

inline float round_f16(float x) { return f16_bits_to_float(float_to_f16_bits(x)); }
inline float round_bf16(float x) { return bf16_bits_to_float(float_to_bf16_bits(x)); }

}  // namespace fa
