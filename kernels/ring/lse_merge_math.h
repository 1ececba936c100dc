// The merge of two partial attention results by their log-sum-exp, the one formula
// the ring's merge kernel and the CPU tests share.
//
// A partial result over a set of keys K_a is (O_a, L_a): O_a the softmax-weighted
// mean of V over K_a, L_a = log sum_{j in K_a} exp(s_j). Over K_a and K_b together
//   L = log(exp(L_a) + exp(L_b)) = m + log(exp(L_a - m) + exp(L_b - m)),  m = max(L_a, L_b)
//   O = exp(L_a - L) O_a + exp(L_b - L) O_b
// (subtracting m keeps every exponential <= 1). A side that saw no key has
// L = -inf and weight 0; when neither did, L stays -inf and O stays 0, as a row
// that sees no key reads in the reference.
#pragma once
#include <math.h>

#if defined(__CUDACC__)
#define FA_RING_HD __host__ __device__ __forceinline__
#else
#define FA_RING_HD inline
#endif

namespace fa::ring {

struct MergeWeights {
  float lse;     // L of the union
  float w_a, w_b;  // exp(L_a - L), exp(L_b - L)
};

FA_RING_HD MergeWeights merge_weights(float lse_a, float lse_b) {
  const float m = fmaxf(lse_a, lse_b);
  if (m == -INFINITY) return {-INFINITY, 0.f, 0.f};
  const float ea = expf(lse_a - m), eb = expf(lse_b - m);  // exp(-inf) = 0: an empty side
  const float sum = ea + eb;  // in [1, 2]: the larger side contributes 1
  return {m + logf(sum), ea / sum, eb / sum};
}

}  // namespace fa::ring
