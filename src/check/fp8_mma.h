// Hopper's FP8 tensor-core dot products as measured on the H200
// (tests/gpu/standalone/fp8_accum_probe.cu; docs/MEASUREMENT.md, "The FP8
// tolerance rule"): a wgmma k-step adds 32 exact e4m3 x e4m3 products to the
// float32 accumulator, and every addend, the running sum included, is first
// truncated toward zero to a multiple of 2^(E - 13). E is the largest of the
// products' exponent fields (e_q + e_k, an e4m3 subnormal counting as 2^-6,
// the mantissas' product not carried in) and the running sum's exponent. So a
// small product beside a large one loses what lies more than 13 bits below
// the large one's exponent, and 31 such products lose it 31 times, where
// float32 would keep their sum. The model reproduces crafted scores exactly
// and most random ones bit for bit; the rest differ by a few units of the
// grid, with the same error statistics (the probe's figures).
//
// The FP8 standard (check/metrics.cpp) computes its scores this way, so its
// error, which the tolerance doubles, holds what the tensor cores lose.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensors.h"

namespace fa {

inline constexpr int kFp8MmaDepth = 32;     // products per k-step (wgmma ...k32 on e4m3)
inline constexpr int kFp8MmaKeptBits = 13;  // bits kept below the leading bit of the largest addend

// sum_i a[i] b[i] over i < n in k-steps of kFp8MmaDepth from i = 0, the
// products exact (e4m3 values: every product is a float).
float fp8_mma_dot(const float* a, const float* b, int n);

// out[r * n_keys + j] = fp8_mma_dot(q + r * n, key j, n) for r < rows and
// j < n_keys: the same arithmetic, vectorized over keys, on keys as
// fp8_keys_blocked lays them out.
inline constexpr int kFp8MmaKeys = 16;
void fp8_mma_scores(const float* q, int rows, int n, const float* kb, int64_t n_keys, float* out);

// `n_keys` keys of `n` channels, key j's channel i at keys[j * stride + i], in
// fp8_mma_scores' layout: blocks of kFp8MmaKeys keys (the last padded with
// zeros), each n channels x kFp8MmaKeys values then as many of 2^(exponent field).
std::vector<float> fp8_keys_blocked(const float* keys, int64_t n_keys, int n, int64_t stride);

// The descale of element (b, s, h) of a quantized tensor (tensors.h: its groups).
inline float descale_at(const E4m3Codes& c, int64_t b, int64_t s, int64_t h) {
  return c.descales[size_t(b * c.batch_stride + h * c.head_stride + (c.block_rows ? s / c.block_rows : 0))];
}

}  // namespace fa
