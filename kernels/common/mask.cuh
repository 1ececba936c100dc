// Which keys a query row sees, and masking of score fragments.
//
// Causal attention is bottom-right aligned (flash-attention's convention): query
// row i sees keys j <= i + seqlen_k - seqlen_q. With seqlen_q > seqlen_k the first
// seqlen_q - seqlen_k rows see no key at all; kernels write O = 0, LSE = -inf there.
// Keys >= seqlen_k (a ragged last block) are never seen.
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>

namespace fa {

struct KeyRange {
  int seqlen_q, seqlen_k;
  bool causal;

  // One past the last key `row` sees (0 = none).
  __host__ __device__ __forceinline__ int key_end(int row) const {
    if (!causal) return seqlen_k;
    int end = row + seqlen_k - seqlen_q + 1;
    return end < 0 ? 0 : (end > seqlen_k ? seqlen_k : end);
  }

  // Key blocks of size BlockN that rows [row0, row0 + rows) touch: [0, n_blocks).
  template <int BlockN>
  __host__ __device__ __forceinline__ int n_blocks(int row0, int rows) const {
    int last_row = row0 + rows - 1;
    if (last_row > seqlen_q - 1) last_row = seqlen_q - 1;
    return (key_end(last_row) + BlockN - 1) / BlockN;
  }

  // Key blocks [0, result) that every row from row0 on sees in full: no mask needed.
  // Blocks from there on are the causal diagonal or the ragged tail.
  template <int BlockN>
  __host__ __device__ __forceinline__ int n_blocks_unmasked(int row0) const {
    return key_end(row0) / BlockN;
  }

  // The first query row that sees key `key` (< seqlen_k), seen from the key's side
  // as the backward pass loops: every row from there on sees it. May be < 0.
  __host__ __device__ __forceinline__ int query_begin(int key) const {
    return causal ? key + seqlen_q - seqlen_k : 0;
  }
};

// Sets acc to -inf outside columns [range(row).x, range(row).y) of each fragment
// row. Fragment layout of mma.m16n8k16's C (see mma_sm80.cuh): acc[mt][nt][0..1] row
// g, acc[mt][nt][2..3] row g+8, columns 2t, 2t+1 of n-tile nt. row0/col0: the first
// row / column of this warp's tile.
template <int MTiles, int NTiles, typename Range>
__device__ __forceinline__ void mask_rows(float (&acc)[MTiles][NTiles][4], int row0, int col0,
                                          int lane, Range range) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int2 cols = range(row0 + mt * 16 + g + half * 8);
#pragma unroll
      for (int nt = 0; nt < NTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = col0 + nt * 8 + 2 * t + e;
          if (col < cols.x || col >= cols.y) acc[mt][nt][half * 2 + e] = -INFINITY;
        }
      }
    }
  }
}

// Sets S to -inf where the key is not seen (rows are queries, columns keys).
template <int MTiles, int NTiles>
__device__ __forceinline__ void mask_scores(float (&acc)[MTiles][NTiles][4], const KeyRange& kr,
                                            int row0, int col0, int lane) {
  mask_rows(acc, row0, col0, lane, [&](int row) { return make_int2(INT_MIN, kr.key_end(row)); });
}

// The same for S^T, the backward's orientation (rows are keys, columns queries).
// Keys >= seqlen_k (a ragged last block) are masked for every query.
template <int MTiles, int NTiles>
__device__ __forceinline__ void mask_scores_transposed(float (&acc)[MTiles][NTiles][4],
                                                       const KeyRange& kr, int key0, int query0,
                                                       int lane) {
  mask_rows(acc, key0, query0, lane, [&](int key) {
    return make_int2(key < kr.seqlen_k ? kr.query_begin(key) : INT_MAX, INT_MAX);
  });
}

}  // namespace fa
