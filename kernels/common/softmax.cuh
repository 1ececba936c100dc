// Online softmax on mma.m16n8k16 accumulator fragments (layout in mma_sm80.cuh).
//
// Each thread holds two rows per 16-row m-tile (g and g+8); the four threads of a
// quad (same g) together hold a row, so row reductions are two xor-shuffles.
// Scores stay unscaled; exp2 takes scale * log2(e) folded in (one FFMA per element,
// FA2's trick). A row whose max is still -inf (it has seen no key yet) uses 0 as
// its max so exp2(-inf - 0) = 0 instead of NaN.
#pragma once
#include <cmath>

namespace fa {

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffff, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffff, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffff, x, 1);
  return x + __shfl_xor_sync(0xffffffff, x, 2);
}

// 2^x on the SFU, flushing denormals: the plain exp2f adds range fix-ups that cost
// issue slots in the softmax, which is the non-matmul bottleneck of the forward.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The max used as exp2's offset: 0 for a row that has seen nothing.
__device__ __forceinline__ float safe_offset(float m, float scale_log2) {
  return m == -INFINITY ? 0.f : m * scale_log2;
}

// Row statistics for MTiles m-tiles: index r = 2 * mt + half.
template <int MTiles>
struct RowStats {
  float m[2 * MTiles];  // running max of the raw scores
  float l[2 * MTiles];  // running sum of exp2(scale_log2 * (s - m)); per thread or full row

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int r = 0; r < 2 * MTiles; ++r) {
      m[r] = -INFINITY;
      l[r] = 0.f;
    }
  }
};

// One online-softmax step (FA2 form): updates the max with this block of scores,
// replaces S by P = exp2(scale_log2 * (s - m_new)) in place, rescales the running
// O by alpha = exp2(scale_log2 * (m_old - m_new)) and adds P's per-thread row sums
// to l. l stays a per-thread partial sum (reduced once at the end: sums are linear).
template <int MTiles, int NTiles, int DTiles>
__device__ __forceinline__ void softmax_rescale(float (&s)[MTiles][NTiles][4],
                                                float (&o)[MTiles][DTiles][4],
                                                RowStats<MTiles>& st, float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = 2 * mt + half;
      float mx = st.m[r];
#pragma unroll
      for (int nt = 0; nt < NTiles; ++nt)
        mx = fmaxf(mx, fmaxf(s[mt][nt][2 * half], s[mt][nt][2 * half + 1]));
      mx = quad_max(mx);
      const float offset = safe_offset(mx, scale_log2);
      // The old max is not made safe: for a row that had seen nothing, -inf gives
      // alpha = 0 (O and l are 0 anyway), never inf * 0 when scores are very negative.
      const float alpha = fast_exp2(st.m[r] * scale_log2 - offset);
      st.m[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < NTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float p = fast_exp2(fmaf(s[mt][nt][2 * half + e], scale_log2, -offset));
          s[mt][nt][2 * half + e] = p;
          sum += p;
        }
      }
      st.l[r] = st.l[r] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < DTiles; ++dt) {
        o[mt][dt][2 * half] *= alpha;
        o[mt][dt][2 * half + 1] *= alpha;
      }
    }
  }
}

// End of the row: reduce l over the quad, divide O by it, and return the natural-log
// LSE per row in lse[r]. A row that saw no key: O = 0, LSE = -inf.
template <int MTiles, int DTiles>
__device__ __forceinline__ void softmax_finalize(float (&o)[MTiles][DTiles][4],
                                                 RowStats<MTiles>& st, float scale,
                                                 float (&lse)[2 * MTiles]) {
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = 2 * mt + half;
      const float l = quad_sum(st.l[r]);
      const bool empty = l == 0.f || st.m[r] == -INFINITY;
      const float inv = empty ? 0.f : 1.f / l;
      lse[r] = empty ? -INFINITY : st.m[r] * scale + logf(l);
#pragma unroll
      for (int dt = 0; dt < DTiles; ++dt) {
        o[mt][dt][2 * half] *= inv;
        o[mt][dt][2 * half + 1] *= inv;
      }
    }
  }
}

}  // namespace fa
