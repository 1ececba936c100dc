// Writing a block's float accumulators to global memory as 16-bit elements: each
// warp drops its mma.m16n8k16 C fragments (layout in mma_sm80.cuh) into a swizzled
// shared tile, then the CTA copies whole rows out in 16-byte chunks, so the global
// stores are coalesced instead of 4-byte scattered.
#pragma once
#include <cstdint>

#include "common/convert.cuh"
#include "common/mma_sm80.cuh"

namespace fa {

// acc[mt][dt] holds rows row0 + 16*mt + g (+8) and columns col0 + 8*dt + 2t (+1) of a
// Cols-wide swizzled tile; each value is multiplied by `scale` and rounded to Elem.
template <typename Elem, int Cols, int MTiles, int DTiles>
__device__ __forceinline__ void frags_to_smem(Elem* tile, const float (&acc)[MTiles][DTiles][4],
                                              int row0, int col0, float scale, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int dt = 0; dt < DTiles; ++dt) {
        const int row = row0 + mt * 16 + g + half * 8, col = col0 + dt * 8 + 2 * t;
        *reinterpret_cast<uint32_t*>(tile + swizzle<Cols>(row, col)) =
            pack2<Elem>(acc[mt][dt][2 * half] * scale, acc[mt][dt][2 * half + 1] * scale);
      }
}

// Copies rows [0, valid_rows) of a swizzled Rows x Cols shared tile to global memory
// (row stride `ld` elements), 16 bytes per thread and step.
template <int Rows, int Cols, int Threads, typename Elem>
__device__ __forceinline__ void smem_tile_to_global(Elem* gmem, int64_t ld, const Elem* tile,
                                                    int valid_rows, int tid) {
  constexpr int kChunksPerRow = Cols / 8;
  static_assert(Rows * kChunksPerRow % Threads == 0, "tile chunks must divide over the threads");
#pragma unroll
  for (int i = 0; i < Rows * kChunksPerRow / Threads; ++i) {
    const int idx = tid + i * Threads;
    const int row = idx / kChunksPerRow, col = (idx % kChunksPerRow) * 8;
    if (row < valid_rows)
      *reinterpret_cast<uint4*>(gmem + row * ld + col) =
          *reinterpret_cast<const uint4*>(tile + swizzle<Cols>(row, col));
  }
}

}  // namespace fa
