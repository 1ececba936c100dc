// Online softmax on wgmma accumulator fragments (layout: see sm90/wgmma.cuh).
// Each thread holds two rows (g and g + 8 of its warp's 16) and, per row, 2
// columns of every 8-column block; a row is spread over the 4 threads of a quad,
// so row reductions are two xor-shuffles.
#pragma once
#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/exp2_poly.h"

namespace fa::fa3 {

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));  // exp2(-inf) = +0
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Set S to -inf where key col may not be seen by the row: col >= seqlen_k, or
// (causal) col > row + seqlen_k - seqlen_q. col_base = first key of the block.
// kDiagonalPairs: a causal block that lies inside seqlen_k hides keys only right of
// the diagonal, and row0 + 8's first hidden key is row0's plus 8, so (row0 + 8,
// column c + 8) takes (row0, c)'s test: one compare serves two elements (cuDNN's
// kernel does the same; PERF_NOTES fa3-short-diagonal-pairs). Taken for a tile's
// first block (the diagonal one) only: in the block loop it would grow the code
// that every block runs.
template <int BlockN, bool kDiagonalPairs = false>
__device__ __forceinline__ void apply_mask(float (&s)[BlockN / 2], int col_base, int row0, int seqlen_q,
                                           int seqlen_k, bool causal) {
  const int t = threadIdx.x % 4;
  if (kDiagonalPairs && causal && col_base + BlockN <= seqlen_k) {
    // Element (row0, group k, e) is key col_base + 8k + 2t + e: hidden from 8k + e on.
    const int first_hidden = row0 + seqlen_k - seqlen_q + 1 - col_base - 2 * t;
#pragma unroll
    for (int k = -1; k < BlockN / 8; ++k)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const bool hidden = 8 * k + e >= first_hidden;
        if (k >= 0 && hidden) s[4 * k + e] = -INFINITY;                         // row0, group k
        if (k + 1 < BlockN / 8 && hidden) s[4 * (k + 1) + 2 + e] = -INFINITY;  // row0 + 8, group k + 1
      }
    return;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    const int limit = causal ? min(seqlen_k, row + seqlen_k - seqlen_q + 1) : seqlen_k;  // first hidden col
#pragma unroll
    for (int j = 0; j < BlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (col_base + 8 * j + 2 * t + e >= limit) s[4 * j + 2 * r + e] = -INFINITY;
  }
}

// Running row state: max m (raw score units) and this thread's partial sum l
// of exp2(scale_log2 * (s - m)); l is reduced over the quad once, at the end.
struct RowState {
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.f, 0.f};
};

// v[0] becomes the maximum of v[0 .. N-1], halving the live values each step
// (a template recursion: every step unrolls, so v stays in registers).
template <int N, int M>
__device__ __forceinline__ void fold_max(float (&v)[M]) {
  if constexpr (N > 1) {
    constexpr int kHalf = (N + 1) / 2;
#pragma unroll
    for (int j = 0; j < N / 2; ++j) v[j] = fmaxf(v[j], v[j + kHalf]);
    fold_max<kHalf>(v);
  }
}

// Row r's maximum over this thread's columns of the block and `init`, reduced over the quad.
// Tree: folded log2 of the columns deep instead of one chain through every
// column (the same value: a maximum is exact). Which form is faster depends on
// the kernel around it: ptxas schedules the softmax differently (Fa3Traits::kTreeMax).
template <int BlockN, bool Tree = false>
__device__ __forceinline__ float block_row_max(const float (&s)[BlockN / 2], int r, float init) {
  if constexpr (Tree) {
    float v[BlockN / 8];
#pragma unroll
    for (int j = 0; j < BlockN / 8; ++j) v[j] = fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]);
    fold_max<BlockN / 8>(v);
    return quad_max(fmaxf(v[0], init));
  } else {
    float mx = init;
#pragma unroll
    for (int j = 0; j < BlockN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    return quad_max(mx);
  }
}

// Row r's scores become exp2(scale_log2 * s - m) in place; returns this thread's sum of them.
// PolyEvery > 0: the columns of every PolyEvery-th 8-column group go to exp2_poly
// (the FMA pipe) instead of ex2.approx (MUFU); 0: all to MUFU.
template <int BlockN, int PolyEvery = 0>
__device__ __forceinline__ float exp2_row(float (&s)[BlockN / 2], int r, float scale_log2, float m) {
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < BlockN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float& x = s[4 * j + 2 * r + e];
      const float arg = fmaf(x, scale_log2, -m);
      x = PolyEvery > 0 && (j + 1) % (PolyEvery > 0 ? PolyEvery : 1) == 0 ? exp2_poly(arg) : fast_exp2(arg);
      sum += x;
    }
  return sum;
}

// One K/V block: new row max m_new, S turned into P = exp(scale * (S - m_new))
// in place, l rescaled and extended. Returns in alpha the factor
// exp(scale * (m_old - m_new)) by which O must be rescaled: the caller applies
// it once the P V product that may still run on the old O has finished. A row
// that has seen no key yet (max -inf) uses 0 as
// its max so exp gives 0, not NaN.
template <int BlockN, int PolyEvery = 0, bool TreeMax = false>
__device__ __forceinline__ void online_softmax(float (&s)[BlockN / 2], RowState& st, float scale_log2,
                                               float (&alpha)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float mx = block_row_max<BlockN, TreeMax>(s, r, st.m[r]);
    const float m_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
    alpha[r] = fast_exp2(st.m[r] * scale_log2 - m_scaled);
    st.m[r] = mx;
    const float sum = exp2_row<BlockN, PolyEvery>(s, r, scale_log2, m_scaled);
    st.l[r] = st.l[r] * alpha[r] + sum;
  }
}

// online_softmax with a scale that may change from one K/V block to the next
// (an FP8 forward with a K descale per block of keys): the running max is kept
// scaled (log2 units), so maxima of blocks with different scales compare. With
// one scale for every block the values are online_softmax's, bit for bit:
// max(a, b) * s = max(a * s, b * s) for s > 0. LSE = m * ln 2 + ln l.
template <int BlockN, int PolyEvery = 0>
__device__ __forceinline__ void online_softmax_scaled(float (&s)[BlockN / 2], RowState& st, float scale_log2,
                                                      float (&alpha)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m_new = fmaxf(st.m[r], block_row_max<BlockN>(s, r, -INFINITY) * scale_log2);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[r] = fast_exp2(st.m[r] - m_use);
    st.m[r] = m_new;
    const float sum = exp2_row<BlockN, PolyEvery>(s, r, scale_log2, m_use);
    st.l[r] = st.l[r] * alpha[r] + sum;
  }
}

// O *= alpha, per row.
template <int HeadDim>
__device__ __forceinline__ void rescale_o(float (&o)[HeadDim / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < HeadDim / 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      o[4 * j + 2 * r] *= alpha[r];
      o[4 * j + 2 * r + 1] *= alpha[r];
    }
}

template <typename Elem>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t u;
  if constexpr (sizeof(Elem) == 2 && std::is_same_v<Elem, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    u = *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    u = *reinterpret_cast<uint32_t*>(&v);
  }
  return u;
}

// P (float accumulator layout) -> the A operand of the k16 steps of O += P V.
template <typename Elem, int BlockN>
__device__ __forceinline__ void p_to_a_fragments(const float (&s)[BlockN / 2], uint32_t (&a)[BlockN / 16][4]) {
#pragma unroll
  for (int k = 0; k < BlockN / 16; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) a[k][i] = pack2<Elem>(s[8 * k + 2 * i], s[8 * k + 2 * i + 1]);
}

}  // namespace fa::fa3
