// The FP8 tensor cores' accumulation (check/fp8_mma.h). Every partial sum here
// is exact in float32: a step's addends are multiples of 2^(E - 13) below
// 33 * 2^(E + 2) in magnitude (a product's mantissas multiply to less than 4),
// 21 bits, so the order of the additions does not matter and float32
// reproduces the hardware's integer adder.
#include "check/fp8_mma.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace fa {

namespace {

// Toward zero, for |x| < 2^31: every x here is below 2^15 on its grid. An int
// conversion, which vectorizes where std::trunc does not.
inline float trunc_small(float x) { return float(int32_t(x)); }

// 2^(e4m3 exponent field) of a value, subnormals at 2^-6; 0 for 0. The step's
// alignment exponent is the largest of these products (and of the running
// sum's own exponent): a product of powers of two, exact in float.
inline float field_pow2(float x) {
  if (x == 0.f) return 0.f;
  const uint32_t e = std::bit_cast<uint32_t>(x) & 0x7F800000u;
  return std::max(std::bit_cast<float>(e), 0x1p-6f);
}

// The grid of a step whose alignment magnitude is `top` (2^E, or the running
// sum when it is larger): ulp = 2^(E - 13) and its inverse, from the exponent
// field (top >= 2^-31 here: e4m3 fields are at least 2^-6 each, a running sum
// a multiple of 2^-31); 0 gives a grid of 1, on which a step of zeros sums to 0.
constexpr uint32_t kShift = uint32_t(kFp8MmaKeptBits) << 23;  // 2^-13 in the exponent field
struct Grid {
  float ulp, inv;
};
inline Grid grid_of(float top) {
  const uint32_t e = std::bit_cast<uint32_t>(top) & 0x7F800000u;  // 2^E's bits
  const uint32_t ulp = e == 0 ? 127u << 23 : e - kShift, inv = e == 0 ? 127u << 23 : (254u << 23) - e + kShift;
  return {std::bit_cast<float>(ulp), std::bit_cast<float>(inv)};
}

}  // namespace

float fp8_mma_dot(const float* a, const float* b, int n) {
  float acc = 0.f;
  float prod[kFp8MmaDepth];
  for (int s0 = 0; s0 < n; s0 += kFp8MmaDepth) {
    const int len = std::min(kFp8MmaDepth, n - s0);
    float top = std::fabs(acc);
    for (int i = 0; i < len; ++i) {
      prod[i] = a[s0 + i] * b[s0 + i];
      top = std::max(top, field_pow2(a[s0 + i]) * field_pow2(b[s0 + i]));
    }
    const Grid g = grid_of(top);
    float sum = trunc_small(acc * g.inv) * g.ulp;
    for (int i = 0; i < len; ++i) sum += trunc_small(prod[i] * g.inv) * g.ulp;
    acc = sum;
  }
  return acc;
}

// The same arithmetic on kFp8MmaKeys keys at once, in GCC/Clang vector types:
// one AVX-512 register of 16 floats in the x86-64-v4 clone of fp8_mma_scores,
// two AVX2 registers in the default one. The FP8 standard runs it on every
// checked row against every key it sees.
namespace {
using FV = float __attribute__((vector_size(4 * kFp8MmaKeys)));
using IV = int32_t __attribute__((vector_size(4 * kFp8MmaKeys)));
using UV = uint32_t __attribute__((vector_size(4 * kFp8MmaKeys)));
}  // namespace

// x86-64 only: elsewhere (FA_BENCH_HOST_ARCH empty on another architecture,
// docs/BUILD.md) the one form the compiler targets.
#if defined(__x86_64__)
#define FA_FP8_MMA_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define FA_FP8_MMA_CLONES
#endif

FA_FP8_MMA_CLONES
void fp8_mma_scores(const float* q, int rows, int n, const float* kb, int64_t n_keys, float* out) {
  const int64_t block_floats = int64_t(2) * n * kFp8MmaKeys;
  std::vector<float> q_pow2(size_t(int64_t(rows) * n));
  for (size_t i = 0; i < q_pow2.size(); ++i) q_pow2[i] = field_pow2(q[i]);
  for (int64_t j0 = 0; j0 < n_keys; j0 += kFp8MmaKeys) {
    // This block's n x kFp8MmaKeys values, then as many field powers: in L1 across the rows.
    const float* values = kb + j0 / kFp8MmaKeys * block_floats;
    const float* pow2 = values + int64_t(n) * kFp8MmaKeys;
    const int64_t w = std::min<int64_t>(kFp8MmaKeys, n_keys - j0);
    for (int r = 0; r < rows; ++r) {
      const float* qr = q + int64_t(r) * n;
      const float* qp = q_pow2.data() + int64_t(r) * n;
      // A step's alignment first, then its addends truncated to the grid and
      // summed as integers: each is below 2^15 units and a step holds 33, so the
      // int32 sum is the float sum of fp8_mma_dot, exactly, without a float
      // conversion and multiply per addend or the products kept across the step.
      FV acc = {};
      for (int s0 = 0; s0 < n; s0 += kFp8MmaDepth) {
        const int len = std::min(kFp8MmaDepth, n - s0);
        FV top = FV(UV(acc) & 0x7FFFFFFFu);  // |acc|
        for (int i = 0; i < len; ++i) {
          FV kp;
          std::memcpy(&kp, pow2 + (s0 + i) * kFp8MmaKeys, sizeof kp);
          const FV pk = qp[s0 + i] * kp;
          top = top > pk ? top : pk;
        }
        // grid_of, lane by lane (written out here: a helper returning a 64-byte
        // vector changes the ABI between the two clones, which GCC warns of).
        const UV e = UV(top) & 0x7F800000u;
        const FV ulp = FV(e == 0 ? UV{} + (127u << 23) : e - kShift);
        const FV inv = FV(e == 0 ? UV{} + (127u << 23) : (254u << 23) - e + kShift);
        IV units = __builtin_convertvector(acc * inv, IV);
        for (int i = 0; i < len; ++i) {
          FV k;
          std::memcpy(&k, values + (s0 + i) * kFp8MmaKeys, sizeof k);
          units += __builtin_convertvector((qr[s0 + i] * k) * inv, IV);
        }
        acc = __builtin_convertvector(units, FV) * ulp;
      }
      for (int64_t l = 0; l < w; ++l) out[int64_t(r) * n_keys + j0 + l] = acc[l];
    }
  }
}

std::vector<float> fp8_keys_blocked(const float* keys, int64_t n_keys, int n, int64_t stride) {
  const int64_t blocks = (n_keys + kFp8MmaKeys - 1) / kFp8MmaKeys, block_floats = int64_t(2) * n * kFp8MmaKeys;
  std::vector<float> kb(size_t(blocks * block_floats), 0.f);
  for (int64_t j = 0; j < n_keys; ++j)
    for (int i = 0; i < n; ++i) {
      float* block = kb.data() + j / kFp8MmaKeys * block_floats;
      const float x = keys[j * stride + i];
      block[i * kFp8MmaKeys + j % kFp8MmaKeys] = x;
      block[(n + i) * kFp8MmaKeys + j % kFp8MmaKeys] = field_pow2(x);
    }
  return kb;
}

}  // namespace fa
