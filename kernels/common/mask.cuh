// Which keys a query row sees, and masking of score fragments.
//
// Causal attention is bottom-right aligned (flash-attention's convention): query
// row i sees keys j <= i + seqlen_k - seqlen_q. With seqlen_q > seqlen_k the first
// seqlen_q - seqlen_k rows see no key at all; kernels write O = 0, LSE = -inf there.
// Keys >= seqlen_k (a ragged last block) are never seen.
#pragma once
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
};

// Sets S to -inf where the key is not seen. Fragment layout of mma.m16n8k16's C
// (see mma_sm80.cuh): acc[mt][nt][0..1] row g, acc[mt][nt][2..3] row g+8, columns
// 2t, 2t+1 of n-tile nt. row0/col0: the first row / key of this warp's tile.
template <int MTiles, int NTiles>
__device__ __forceinline__ void mask_scores(float (&acc)[MTiles][NTiles][4], const KeyRange& kr,
                                            int row0, int col0, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int end = kr.key_end(row0 + mt * 16 + g + half * 8);
#pragma unroll
      for (int nt = 0; nt < NTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = col0 + nt * 8 + 2 * t + e;
          if (col >= end) acc[mt][nt][half * 2 + e] = -INFINITY;
        }
      }
    }
  }
}

// The same for a transposed score tile S^T (rows are keys, columns queries), as a
// backward that computes S^T = K Q^T holds it: acc[kt][nt][0..1] key g, acc[kt][nt][2..3]
// key g+8 of k-tile kt, queries 2t, 2t+1 of n-tile nt. key0/q0: this warp's first key / query.
template <int KTiles, int QTiles>
__device__ __forceinline__ void mask_scores_t(float (&acc)[KTiles][QTiles][4], const KeyRange& kr,
                                              int key0, int q0, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < QTiles; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int end = kr.key_end(q0 + nt * 8 + 2 * t + e);
#pragma unroll
      for (int kt = 0; kt < KTiles; ++kt) {
#pragma unroll
        for (int half = 0; half < 2; ++half)
          if (key0 + kt * 16 + g + half * 8 >= end) acc[kt][nt][half * 2 + e] = -INFINITY;
      }
    }
  }
}

}  // namespace fa
