// The block GEMMs of attention, for one warp on mma.m16n8k16, with operands in
// swizzled shared memory (addresses from swizzle_base/swizzle_step):
//   S  = Q K^T : Q rows [16*MTiles] x HeadDim, K rows [16*NTiles/2] x HeadDim
//   O += P V   : P from the S accumulators (packed to 16 bits), V [keys] x HeadDim;
//                or (warp_pv_smem) P from shared memory, for a warp that holds
//                only some of S's columns and some of O's
//   C += A B   : (warp_gemm_at_b) both from shared memory, A stored transposed
// Shared by fa1 and fa2 (forward and backward), which differ in their loops and
// where the accumulators live.
#pragma once
#include <cstdint>

#include "common/convert.cuh"
#include "common/mma_sm80.cuh"

namespace fa {

template <int MTiles, int NTiles>
__device__ __forceinline__ void zero(float (&acc)[MTiles][NTiles][4]) {
#pragma unroll
  for (int i = 0; i < MTiles; ++i)
#pragma unroll
    for (int j = 0; j < NTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}

// Lane base addresses for the three operands (see the fragment layouts in
// mma_sm80.cuh): Q as A (non-transposed), K as B (non-transposed), V as B (transposed).
template <int HeadDim>
__device__ __forceinline__ uint32_t q_lane_base(const void* sQ, int warp_row0, int lane) {
  return swizzle_base(sQ, warp_row0 + (lane & 7) + ((lane >> 3) & 1) * 8, HeadDim, lane >> 4);
}
template <int HeadDim>
__device__ __forceinline__ uint32_t k_lane_base(const void* sK, int lane) {
  return swizzle_base(sK, (lane & 7) + (lane >> 4) * 8, HeadDim, (lane >> 3) & 1);
}
template <int HeadDim>
__device__ __forceinline__ uint32_t v_lane_base(const void* sV, int lane) {
  return swizzle_base(sV, (lane & 7) + ((lane >> 3) & 1) * 8, HeadDim, lane >> 4);
}
// A read transposed (ldmatrix .trans) from a tile that stores A^T, k along its rows:
// x4 matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15) are
// stored rows k 0-7 / 8-15 and column chunks m 0 / 1, the same lane pattern as K's.
template <int Cols>
__device__ __forceinline__ uint32_t at_lane_base(const void* sAt, int lane) {
  return k_lane_base<Cols>(sAt, lane);
}

// acc[mt][2j], acc[mt][2j+1] += a[mt] times the two 8-column n-tiles of one
// ldmatrix.x4 B load (b[0], b[1] the first, b[2], b[3] the second), for every m-tile.
template <typename Elem, int MTiles, int NTiles>
__device__ __forceinline__ void mma_ntile_pair(float (&acc)[MTiles][NTiles][4],
                                               const uint32_t (&a)[MTiles][4],
                                               const uint32_t (&b)[4], int j) {
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
    mma_16816<Elem>(acc[mt][2 * j], a[mt], b[0], b[1]);
    mma_16816<Elem>(acc[mt][2 * j + 1], a[mt], b[2], b[3]);
  }
}

// One 16-deep k-step of acc += A B: A given (a[mt], this step's columns), B the rows
// [16*kk, 16*kk + 16) of a swizzled tile with k along its rows, read transposed
// (b_base from v_lane_base; BRowBytes its row pitch), columns [16*dp0, 16*dp0 + 8*DTiles).
template <typename Elem, int BRowBytes, int MTiles, int DTiles>
__device__ __forceinline__ void mma_step_b_rows(float (&acc)[MTiles][DTiles][4],
                                                const uint32_t (&a)[MTiles][4], uint32_t b_base,
                                                int kk, int dp0) {
#pragma unroll
  for (int dp = 0; dp < DTiles / 2; ++dp) {
    uint32_t b[4];
    ldmatrix_x4_trans(b, swizzle_step(b_base, dp0 + dp) + kk * 16 * BRowBytes);
    mma_ntile_pair<Elem>(acc, a, b, dp);
  }
}

// acc_s += Q K^T over the full head dim.
template <typename Elem, int HeadDim, int MTiles, int NTiles>
__device__ __forceinline__ void warp_qk(float (&acc_s)[MTiles][NTiles][4], uint32_t q_base,
                                        uint32_t k_base) {
  constexpr int kRowBytes = HeadDim * 2;
#pragma unroll
  for (int kk = 0; kk < HeadDim / 16; ++kk) {
    uint32_t a[MTiles][4];
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt)
      ldmatrix_x4(a[mt], swizzle_step(q_base, kk) + mt * 16 * kRowBytes);
#pragma unroll
    for (int np = 0; np < NTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, swizzle_step(k_base, kk) + np * 16 * kRowBytes);
      mma_ntile_pair<Elem>(acc_s, a, b, np);
    }
  }
}

// acc_o += P V with P = acc_s (already exponentiated) rounded to Elem: two adjacent
// C fragments of S are one A fragment, so P never leaves the registers. acc_o holds
// V's columns [16*dp0, 16*dp0 + 8*DTiles) (all of them by default). The backward
// uses it for dV += P^T dO and dK += dS^T Q, with S^T's fragments as A.
template <typename Elem, int HeadDim, int MTiles, int NTiles, int DTiles>
__device__ __forceinline__ void warp_pv(float (&acc_o)[MTiles][DTiles][4],
                                        const float (&acc_s)[MTiles][NTiles][4], uint32_t v_base,
                                        int dp0 = 0) {
#pragma unroll
  for (int kk = 0; kk < NTiles / 2; ++kk) {
    uint32_t a[MTiles][4];
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt) {
      a[mt][0] = pack2<Elem>(acc_s[mt][2 * kk][0], acc_s[mt][2 * kk][1]);
      a[mt][1] = pack2<Elem>(acc_s[mt][2 * kk][2], acc_s[mt][2 * kk][3]);
      a[mt][2] = pack2<Elem>(acc_s[mt][2 * kk + 1][0], acc_s[mt][2 * kk + 1][1]);
      a[mt][3] = pack2<Elem>(acc_s[mt][2 * kk + 1][2], acc_s[mt][2 * kk + 1][3]);
    }
    mma_step_b_rows<Elem, HeadDim * 2>(acc_o, a, v_base, kk, dp0);
  }
}

// acc_o += P V with P [16*MTiles rows x Keys] read from a swizzled shared tile
// (p_base from q_lane_base<Keys>) and V's columns [16*dp0, 16*dp0 + 8*DTiles)
// (v_base from v_lane_base).
template <typename Elem, int Keys, int HeadDim, int MTiles, int DTiles>
__device__ __forceinline__ void warp_pv_smem(float (&acc_o)[MTiles][DTiles][4], uint32_t p_base,
                                             uint32_t v_base, int dp0) {
  constexpr int kPRowBytes = Keys * 2;
#pragma unroll
  for (int kk = 0; kk < Keys / 16; ++kk) {
    uint32_t a[MTiles][4];
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt)
      ldmatrix_x4(a[mt], swizzle_step(p_base, kk) + mt * 16 * kPRowBytes);
    mma_step_b_rows<Elem, HeadDim * 2>(acc_o, a, v_base, kk, dp0);
  }
}

// acc += A B with both operands in swizzled shared memory, k along their rows: A^T
// [16*KSteps rows x ARowElems] (a_base from at_lane_base, this warp's A rows from
// 16*am0), B [16*KSteps rows x BRowElems] (b_base from v_lane_base, columns from
// 16*dp0). The backward's dQ += dS K, with dS stored as dS^T.
template <typename Elem, int ARowElems, int BRowElems, int KSteps, int MTiles, int DTiles>
__device__ __forceinline__ void warp_gemm_at_b(float (&acc)[MTiles][DTiles][4], uint32_t a_base,
                                               int am0, uint32_t b_base, int dp0) {
#pragma unroll
  for (int kk = 0; kk < KSteps; ++kk) {
    uint32_t a[MTiles][4];
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt)
      ldmatrix_x4_trans(a[mt], swizzle_step(a_base, am0 + mt) + kk * 16 * ARowElems * 2);
    mma_step_b_rows<Elem, BRowElems * 2>(acc, a, b_base, kk, dp0);
  }
}

}  // namespace fa
