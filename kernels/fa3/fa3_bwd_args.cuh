// The backward kernel's parameter block (TMA maps and the workspace the pre-pass
// filled), the order of its tiles, and which Q blocks a K/V block visits.
// Passed by value as a __grid_constant__ parameter so the tensor maps stay in
// parameter space, where TMA reads them.
#pragma once
#include <cstdint>

#include <cuda.h>

#include "common/mask.cuh"
#include "fa3/fa3_bwd_order.h"

namespace fa::fa3 {

struct BwdArgs {  // CUtensorMap members carry their own 64-byte alignment
  CUtensorMap tma_q, tma_k, tma_v, tma_do;  // loads
  CUtensorMap tma_dk, tma_dv;               // stores
  // Workspace, per (batch, head) row blocks of seqlen_q_rounded = num_m_blocks * block_m:
  const float* lse_log2;  // LSE * log2(e); +inf where LSE = -inf (P = 0), 0 on padding rows
  const float* dpsum;     // D = rowsum(dO * O); 0 on padding rows
  float* dq_accum;        // float32 dQ / softmax_scale, [batch, heads, num_m_blocks, task, 4096] (fragment order)
  int* dq_semaphore;      // [batch, heads, num_m_blocks]: K/V blocks already added (deterministic mode)
  int batch, heads, heads_kv, seqlen_q, seqlen_k;
  int num_m_blocks, num_n_blocks;
  float softmax_scale, softmax_scale_log2;
  int causal;
  int deterministic;  // dQ added in n_block order (dq_semaphore), so two runs give the same bits
  int group_bh;  // tile order: (batch, kv head) pairs per group, see bwd_tile_at
};

// One block's work: K/V block n_block of one (batch, kv head), against Q blocks
// m_begin .. num_m_blocks-1 of each of the kv head's `group` query heads.
struct BwdTile {
  int n_block, kv_head, batch;
  int group;    // query heads per kv head
  int m_begin;  // first Q block whose rows see a key of this block
};

// The grid has one block per tile, in bwd_order_at's order (fa3_bwd_order.h).
template <int BlockM, int BlockN>
__device__ __forceinline__ BwdTile bwd_tile_at(int idx, const BwdArgs& a) {
  const BwdOrder o = bwd_order_at(idx, a.batch * a.heads_kv, a.num_n_blocks, a.group_bh);
  BwdTile t;
  t.n_block = o.n_block;
  t.kv_head = o.pair % a.heads_kv;
  t.batch = o.pair / a.heads_kv;
  t.group = a.heads / a.heads_kv;
  // Causal, bottom-right aligned: row i sees key j iff j <= i + seqlen_k - seqlen_q,
  // so the block's first key is first seen by row n_block * BlockN + seqlen_q - seqlen_k.
  const int first_row = t.n_block * BlockN + a.seqlen_q - a.seqlen_k;
  t.m_begin = a.causal ? max(0, first_row) / BlockM : 0;
  return t;
}

// Whether Q block m against K/V block n needs the per-element mask: the block
// holds keys past seqlen_k, or (causal) a key some row of the Q block may not
// see. The first row of a Q block sees the fewest keys.
template <int BlockM, int BlockN>
__device__ __forceinline__ bool bwd_block_needs_mask(int n_block, int m_block, const KeyRange& keys) {
  return n_block >= keys.template n_blocks_unmasked<BlockN>(m_block * BlockM);
}

}  // namespace fa::fa3
