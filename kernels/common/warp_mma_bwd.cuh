// Warp-level pieces of an attention backward on mma.m16n8k16 that the forward's
// (warp_mma.cuh) do not cover.
//
// A backward that keeps dK_j and dV_j on chip has each warp own some keys, so it
// computes S^T = K_j Q_i^T and dP^T = V_j dO_i^T (warp_qk with K_j / V_j as the A
// operand): P^T and dS^T come out with keys as rows. That is the A operand of
// dV += P^T dO_i and dK += dS^T Q_i as it stands (pack_a, warp_ab: the accumulator
// pairs are the A fragment), while dQ_i += dS K_j needs dS with queries as rows: it
// reads dS^T from shared memory transposed by ldmatrix.trans (warp_at_b).
#pragma once
#include <cstdint>

#include "common/convert.cuh"
#include "common/mma_sm80.cuh"
#include "common/warp_mma.cuh"

namespace fa {

// acc += A B over `Keys`: A [16*MTiles rows x Keys] read transposed from a swizzled
// [Keys][ACols] tile, B [Keys x BCols] from a swizzled [Keys][BCols] tile, transposed
// like V in P V. a_base: at_lane_base<ACols> moved to the warp's first row,
// swizzle_step(.., m0); b_base: v_lane_base<BCols> moved to its first column pair,
// swizzle_step(.., dp0) (m0, dp0 multiples of the power-of-two MTiles, DTiles / 2,
// so the compile-time steps below add without carries).
template <typename Elem, int Keys, int ACols, int BCols, int MTiles, int DTiles>
__device__ __forceinline__ void warp_at_b(float (&acc)[MTiles][DTiles][4], uint32_t a_base,
                                          uint32_t b_base) {
  static_assert((MTiles & (MTiles - 1)) == 0 && ((DTiles / 2) & (DTiles / 2 - 1)) == 0,
                "power-of-two tiles per warp");
  constexpr int kARowBytes = ACols * 2;
#pragma unroll
  for (int kk = 0; kk < Keys / 16; ++kk) {
    uint32_t a[MTiles][4];
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt)
      ldmatrix_x4_trans(a[mt], swizzle_step(a_base, mt) + kk * 16 * kARowBytes);
    mma_step_b_rows<Elem, BCols * 2>(acc, a, b_base, kk, 0);
  }
}

// Accumulator fragments (rows x cols, as warp_qk leaves them) rounded to Elem and
// packed as A fragments of 16-column k-steps: two adjacent C fragments are one A
// fragment (mma_sm80.cuh), so the 16-bit copy is half the registers of the float one.
template <typename Elem, int MTiles, int NTiles>
__device__ __forceinline__ void pack_a(uint32_t (&a)[MTiles][NTiles / 2][4],
                                       const float (&acc)[MTiles][NTiles][4]) {
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
#pragma unroll
    for (int kk = 0; kk < NTiles / 2; ++kk) {
      a[mt][kk][0] = pack2<Elem>(acc[mt][2 * kk][0], acc[mt][2 * kk][1]);
      a[mt][kk][1] = pack2<Elem>(acc[mt][2 * kk][2], acc[mt][2 * kk][3]);
      a[mt][kk][2] = pack2<Elem>(acc[mt][2 * kk + 1][0], acc[mt][2 * kk + 1][1]);
      a[mt][kk][3] = pack2<Elem>(acc[mt][2 * kk + 1][2], acc[mt][2 * kk + 1][3]);
    }
  }
}

// acc += A B with A in registers (pack_a) over KSteps*16 and B [KSteps*16 x HeadDim]
// from a swizzled tile, transposed like V in P V (b_base from v_lane_base<HeadDim>):
// the forward's warp_pv with its A already packed.
template <typename Elem, int HeadDim, int MTiles, int KSteps>
__device__ __forceinline__ void warp_ab(float (&acc)[MTiles][HeadDim / 8][4],
                                        const uint32_t (&a)[MTiles][KSteps][4], uint32_t b_base) {
#pragma unroll
  for (int kk = 0; kk < KSteps; ++kk) {
    uint32_t ak[MTiles][4];
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt)
#pragma unroll
      for (int r = 0; r < 4; ++r) ak[mt][r] = a[mt][kk][r];
    mma_step_b_rows<Elem, HeadDim * 2>(acc, ak, b_base, kk, 0);
  }
}

// Stores packed fragments (pack_a) into a swizzled [rows][Cols] 16-bit tile at
// (row0, col0), one 32-bit store per register; col0 / 8 must share no bit with the
// chunk offsets 0 .. 2*KSteps - 1 (swizzle_chunks), e.g. col0 a multiple of a
// power of two >= 16*KSteps. The addresses are one base and immediates. A warp's
// 32 stores of one register index hit 8 rows x 4 words of one 16-byte chunk each:
// 32 distinct banks under the swizzle.
template <int Cols, int MTiles, int KSteps>
__device__ __forceinline__ void store_a(const void* tile, const uint32_t (&a)[MTiles][KSteps][4],
                                        int row0, int col0, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const uint32_t base = swizzle_base(tile, row0 + g, Cols, col0 >> 3) + 4 * t;
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
#pragma unroll
    for (int kk = 0; kk < KSteps; ++kk) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {  // a0..a3: rows +0/+8, columns +0/+8
        const uint32_t addr =
            swizzle_chunks(base, 2 * kk + (r >> 1)) + (mt * 16 + (r & 1) * 8) * Cols * 2;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(a[mt][kk][r]));
      }
    }
  }
}

// Row r's dot product sum_c x[r][c] y[r][c] (float32) of two swizzled [Rows][Cols]
// 16-bit tiles, by Threads threads: Threads / Rows consecutive threads share a row
// (a power of two up to 32), each reading whole 16-byte chunks (part, part +
// kPerRow, ...: one base address per tile and immediates). Every thread of the row
// gets the sum; returns it, with the row in `row`.
template <typename Elem, int Rows, int Cols, int Threads>
__device__ __forceinline__ float tile_row_dot(const Elem* x, const Elem* y, int tid, int& row) {
  constexpr int kPerRow = Threads / Rows;
  static_assert(Threads % Rows == 0 && kPerRow <= 32 && (kPerRow & (kPerRow - 1)) == 0,
                "a power-of-two group of threads per row, within a warp");
  constexpr int kChunks = Cols / 8 / kPerRow;
  static_assert(kChunks * kPerRow * 8 == Cols, "whole 16-byte chunks per thread");
  row = tid / kPerRow;
  const int part = tid % kPerRow;
  const uint32_t x_base = swizzle_base(x, row, Cols, part), y_base = swizzle_base(y, row, Cols, part);
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    uint32_t a[4], b[4];
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(swizzle_chunks(x_base, c * kPerRow)));
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                 : "r"(swizzle_chunks(y_base, c * kPerRow)));
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 fa = unpack2<Elem>(a[k]), fb = unpack2<Elem>(b[k]);
      sum = fmaf(fa.x, fb.x, fmaf(fa.y, fb.y, sum));
    }
  }
#pragma unroll
  for (int o = kPerRow / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
  return sum;
}

}  // namespace fa
