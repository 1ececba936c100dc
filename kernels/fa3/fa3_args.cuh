// The kernel's parameter block: TMA descriptors for Q, K, V plus what the
// epilogue and the tile scheduler need. Passed by value as a __grid_constant__
// parameter so the tensor maps stay in parameter space, where TMA reads them.
// Also which K/V blocks a tile visits and which of them need the mask.
#pragma once
#include <cstdint>

#include <cuda.h>

#include "fa3/fa3_scheduler.cuh"

namespace fa::fa3 {

struct Args {  // CUtensorMap members carry their own 64-byte alignment
  CUtensorMap tma_q, tma_k, tma_v;
  void* o;
  float* lse;  // [batch, heads, seqlen_q]
  int batch, heads, heads_kv, seqlen_q, seqlen_k;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  float softmax_scale, softmax_scale_log2;
  int causal;
  TileSchedule schedule;  // the tile list (fa3_scheduler.cuh)
};

// Number of K/V blocks tile m_block visits (fa3_scheduler.cuh, tile_kv_blocks).
template <int BlockM, int BlockN>
__device__ __forceinline__ int kv_blocks(int m_block, const Args& a) {
  return tile_kv_blocks(m_block, BlockM, BlockN, a.seqlen_q, a.seqlen_k, a.causal);
}

// Whether any tile can have kv_blocks() == 0: a row sees no key only under the
// causal mask and only where seqlen_q > seqlen_k (row i sees keys up to
// i + seqlen_k - seqlen_q).
__device__ __forceinline__ bool some_rows_see_no_key(const Args& a) { return a.causal && a.seqlen_q > a.seqlen_k; }

// Whether K/V block n needs the per-element mask for tile m_block: it holds
// keys past seqlen_k, or (causal) keys some row of the tile may not see.
template <int BlockM, int BlockN>
__device__ __forceinline__ bool kv_block_needs_mask(int n, int m_block, const Args& a) {
  if ((n + 1) * BlockN > a.seqlen_k) return true;
  return a.causal && (n + 1) * BlockN - 1 > m_block * BlockM + a.seqlen_k - a.seqlen_q;
}

}  // namespace fa::fa3
