// The kernel's parameter block: TMA descriptors for Q, K, V plus what the
// epilogue and the tile scheduler need. Passed by value as a __grid_constant__
// parameter so the tensor maps stay in parameter space, where TMA reads them.
#pragma once
#include <cstdint>

#include <cuda.h>

namespace fa::fa3 {

struct Args {  // CUtensorMap members carry their own 64-byte alignment
  CUtensorMap tma_q, tma_k, tma_v;
  void* o;
  float* lse;  // [batch, heads, seqlen_q]
  int batch, heads, heads_kv, seqlen_q, seqlen_k;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  float softmax_scale, softmax_scale_log2;
  int causal;
  int num_m_blocks, num_tiles;
  int group_bh;  // causal order: (batch, head) pairs per L2 group, see tile_at
};

// Tile order shared by producer and consumers (both walk the same list).
struct TileCoord {
  int m_block, head, batch;
};

// Static persistent schedule, walked by producer and consumers alike: block b
// takes one tile per round of gridDim.x tiles, position b in even rounds and
// gridDim.x - 1 - b in odd ones (a snake). With the causal order below (longest
// tiles first, so lengths fall along the list) a plain round-robin would give
// block 0 the longest tile of every round, ~12% more work than the last block
// at seqlen 16k; the snake evens that out pairwise.
__device__ __forceinline__ int tile_index(int round, int grid, int b) {
  return round * grid + ((round & 1) ? grid - 1 - b : b);
}

// Non-causal: m_block varies fastest, so the blocks running together read the
// same K/V head (L2 reuse). Causal: the longest tiles (last m_blocks) first,
// so the short ones fill the tail -- within groups of group_bh (batch, head)
// pairs whose K/V fit in half the L2 (the launcher sizes them). Longest-first
// over all heads at once put ~132 different heads in flight at seqlen 4096
// (two m_blocks each), so K/V came from HBM for almost every tile.
__device__ __forceinline__ TileCoord tile_at(int idx, const Args& a) {
  TileCoord t;
  int bh;
  if (a.causal) {
    const int bh_count = a.heads * a.batch;
    const int group = idx / (a.group_bh * a.num_m_blocks);  // every group before this one is full
    const int r = idx - group * a.group_bh * a.num_m_blocks;
    const int in_group = min(a.group_bh, bh_count - group * a.group_bh);
    t.m_block = a.num_m_blocks - 1 - r / in_group;
    bh = group * a.group_bh + r % in_group;
  } else {
    t.m_block = idx % a.num_m_blocks;
    bh = idx / a.num_m_blocks;
  }
  t.head = bh % a.heads;
  t.batch = bh / a.heads;
  return t;
}

// Number of K/V blocks tile m_block visits: all of seqlen_k, or under causal
// masking (bottom-right aligned: row i sees keys j <= i + seqlen_k - seqlen_q)
// only those its last valid row can see. 0: no row sees any key.
template <int BlockM, int BlockN>
__device__ __forceinline__ int kv_blocks(int m_block, const Args& a) {
  int n = (a.seqlen_k + BlockN - 1) / BlockN;
  if (a.causal) {
    const int row_last = min((m_block + 1) * BlockM, a.seqlen_q) - 1;
    const int col_limit = row_last + a.seqlen_k - a.seqlen_q;  // last visible key
    n = col_limit < 0 ? 0 : min(n, col_limit / BlockN + 1);
  }
  return n;
}

// Whether K/V block n needs the per-element mask for tile m_block: it holds
// keys past seqlen_k, or (causal) keys some row of the tile may not see.
template <int BlockM, int BlockN>
__device__ __forceinline__ bool kv_block_needs_mask(int n, int m_block, const Args& a) {
  if ((n + 1) * BlockN > a.seqlen_k) return true;
  return a.causal && (n + 1) * BlockN - 1 > m_block * BlockM + a.seqlen_k - a.seqlen_q;
}

}  // namespace fa::fa3
