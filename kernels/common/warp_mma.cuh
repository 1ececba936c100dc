// The two block GEMMs of an attention forward, for one warp on mma.m16n8k16, with
// operands in swizzled shared memory (addresses from swizzle_base/swizzle_step):
//   S  = Q K^T : Q rows [16*MTiles] x HeadDim, K rows [16*NTiles/2] x HeadDim
//   O += P V   : P from the S accumulators (packed to 16 bits), V [keys] x HeadDim;
//                or (warp_pv_smem) P from shared memory, for a warp that holds
//                only some of S's columns and some of O's
// Shared by fa1 and fa2, which differ only in their loops and where O lives.
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
#pragma unroll
      for (int mt = 0; mt < MTiles; ++mt) {
        mma_16816<Elem>(acc_s[mt][2 * np], a[mt], b[0], b[1]);
        mma_16816<Elem>(acc_s[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// One 16-deep k-step kk of acc += A B with A's fragments a[mt] in registers and B
// rows [16kk, 16kk + 16) of a swizzled [rows][BCols] tile read transposed (V as the
// B operand of P V; v_base from v_lane_base<BCols>), columns [16*dp0, 16*dp0 + 8*DTiles).
template <typename Elem, int BCols, int MTiles, int DTiles>
__device__ __forceinline__ void mma_kstep_bt(float (&acc)[MTiles][DTiles][4],
                                             const uint32_t (&a)[MTiles][4], uint32_t v_base,
                                             int dp0, int kk) {
  static_assert(DTiles % 2 == 0, "B is loaded 16 columns at a time");
  constexpr int kRowBytes = BCols * 2;
#pragma unroll
  for (int dp = 0; dp < DTiles / 2; ++dp) {
    uint32_t b[4];
    ldmatrix_x4_trans(b, swizzle_step(v_base, dp0 + dp) + kk * 16 * kRowBytes);
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt) {
      mma_16816<Elem>(acc[mt][2 * dp], a[mt], b[0], b[1]);
      mma_16816<Elem>(acc[mt][2 * dp + 1], a[mt], b[2], b[3]);
    }
  }
}

// acc_o += P V with P = acc_s (already exponentiated) rounded to Elem: two adjacent
// C fragments of S are one A fragment, so P never leaves the registers.
template <typename Elem, int HeadDim, int MTiles, int NTiles>
__device__ __forceinline__ void warp_pv(float (&acc_o)[MTiles][HeadDim / 8][4],
                                        const float (&acc_s)[MTiles][NTiles][4], uint32_t v_base) {
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
    mma_kstep_bt<Elem, HeadDim>(acc_o, a, v_base, 0, kk);
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
    mma_kstep_bt<Elem, HeadDim>(acc_o, a, v_base, dp0, kk);
  }
}

}  // namespace fa
