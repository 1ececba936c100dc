// The backward's element-wise steps on wgmma accumulator fragments (layout: see
// sm90/wgmma.cuh), and the stores of fragments into shared memory.
//
// A consumer holds S^T and dP^T: rows are its 64 keys, columns the block's
// queries. Thread (warp w, lane 4g + t) holds keys 16w + g and 16w + g + 8 and,
// of every 8 query columns 8j .. 8j+7, the two at 8j + 2t: so the per-query
// statistics (LSE, D) it needs are block_m / 4 values, read from shared memory
// where it needs them rather than kept in registers.
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>

#include "common/mask.cuh"
#include "fa3/fa3_bwd_fault.h"
#include "fa3/fa3_softmax.cuh"

namespace fa::fa3 {

// Where a thread's fragment elements sit in a consumer's m64 x N tile.
struct FragCoord {
  int warp, g, t;
  __device__ static FragCoord of_thread() {
    const int lane = threadIdx.x % 32;
    return {int(threadIdx.x / 32) % 4, lane / 4, lane % 4};
  }
  __device__ int row(int half) const { return 16 * warp + g + 8 * half; }
};

// The mask of a consumer thread: its two keys (rows key0, key0 + 8) are fixed
// for the whole tile, so each gets the first query that sees it once, and an
// entry is hidden iff its query comes before that (keys past seqlen_k: never
// seen; causal: query i sees key j iff j <= i + seqlen_k - seqlen_q).
struct BwdMask {
  int first_query[2];
  int query0;  // query of the thread's first column in the current Q block
  __device__ BwdMask(const KeyRange& keys, int key0) : query0(0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = key0 + 8 * h;
      first_query[h] = key >= keys.seqlen_k ? INT_MAX : keys.causal ? key + keys.seqlen_q - keys.seqlen_k : INT_MIN;
    }
  }
  __device__ bool hidden(int h, int query) const { return query < first_query[h]; }
};

// P^T = exp(scale * S^T - LSE), in place, for Cols query columns: lse2 holds
// LSE * log2(e) per query column (+inf for rows that see no key, so their P is
// 0). Hidden entries (Masked only) are set to 0.
template <int Cols, bool Masked>
__device__ __forceinline__ void scores_to_p(float (&s)[Cols / 2], const float* lse2, float scale_log2,
                                            const FragCoord& fc, const BwdMask& mask) {
#pragma unroll
  for (int j = 0; j < Cols / 8; ++j) {
    const float2 l = *reinterpret_cast<const float2*>(lse2 + 8 * j + 2 * fc.t);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * h + e];
        const float p = fast_exp2(fmaf(x, scale_log2, -(e ? l.y : l.x)));
        if constexpr (Masked)
          x = mask.hidden(h, mask.query0 + 8 * j + 2 * fc.t + e) ? 0.f : p;
        else
          x = p;
      }
  }
}

// dS^T = P^T * (dP^T - D), in place in dp: dpsum holds D per query column.
template <int Cols, Fa3BwdFault Fault = Fa3BwdFault::none>
__device__ __forceinline__ void dp_to_ds(const float (&p)[Cols / 2], float (&dp)[Cols / 2], const float* dpsum,
                                         const FragCoord& fc) {
#pragma unroll
  for (int j = 0; j < Cols / 8; ++j) {
    const float2 d = *reinterpret_cast<const float2*>(dpsum + 8 * j + 2 * fc.t);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (Fault == Fa3BwdFault::no_d_term) {  // planted: dS^T = P^T o dP^T, D forgotten
        dp[4 * j + 2 * h] = p[4 * j + 2 * h] * dp[4 * j + 2 * h];
        dp[4 * j + 2 * h + 1] = p[4 * j + 2 * h + 1] * dp[4 * j + 2 * h + 1];
      } else {
        dp[4 * j + 2 * h] = p[4 * j + 2 * h] * (dp[4 * j + 2 * h] - d.x);
        dp[4 * j + 2 * h + 1] = p[4 * j + 2 * h + 1] * (dp[4 * j + 2 * h + 1] - d.y);
      }
    }
  }
}

// Store a packed m64 x N fragment (A-operand form, p_to_a_fragments) into rows
// row0 .. row0+63, columns col0 .. col0+N-1 of a tile kept as panels of
// [rows][64] 16-bit elements with the 128B swizzle (16-byte chunk c of row r at
// chunk c ^ (r % 8)): the layout TMA and the wgmma descriptors use. row0 is a
// multiple of 8, so r % 8 = g: a warp's 4-byte stores cover 8 rows x 4 distinct
// chunks, all 32 banks. The tile is 1024-byte aligned, so chunk c ^ g of a row is
// the address with g in bits 4..6 XOR c << 4: one register holds the thread's
// address and every store adds constants to it (per-store addresses held in
// registers spilled the hd64 consumer). col0 is a multiple of 64, or of N with
// N < 64 a power of two (its chunk bits then never meet those of j).
template <int N>
__device__ __forceinline__ void store_frag_sw128(uint8_t* tile, int panel_bytes, int row0, int col0,
                                                 const uint32_t (&a)[N / 16][4], const FragCoord& fc) {
  const uint32_t base = (static_cast<uint32_t>(__cvta_generic_to_shared(tile)) + (col0 / 64) * panel_bytes +
                         (row0 + fc.row(0)) * 128 + (fc.g << 4) + 4 * fc.t) ^
                        (((col0 % 64) / 8) << 4);
#pragma unroll
  for (int k = 0; k < N / 16; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int j = 2 * k + i / 2;  // 8-column group: a[k][0..1] cols 16k.., a[k][2..3] cols 16k + 8..
      const uint32_t addr = (base ^ uint32_t((j % 8) << 4)) + (j / 8) * panel_bytes + (i % 2) * 8 * 128;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(a[k][i]) : "memory");
    }
}

// A thread's m64n64 float accumulator into a dQ task slot of shared memory, in
// fragment order: float4 k of thread tid at (k * 128 + tid) * 16 bytes, so each
// warp store is 512 contiguous bytes, and the slot goes to global memory as one
// bulk reduce-add (fa3_bwd_prepost.cuh undoes the order).
__device__ __forceinline__ void store_dq_task(float* slot, const float (&d)[32], int tid) {
#pragma unroll
  for (int k = 0; k < 8; ++k)
    *reinterpret_cast<float4*>(slot + (k * 128 + tid) * 4) = make_float4(d[4 * k], d[4 * k + 1], d[4 * k + 2], d[4 * k + 3]);
}

}  // namespace fa::fa3
