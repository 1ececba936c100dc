// The FP8 forward's parameter block (passed by value as a __grid_constant__, so
// the tensor maps stay in parameter space where TMA reads them), its descale
// factors, and which K/V blocks a tile visits.
#pragma once
#include <cstdint>

#include <cuda.h>

#include "fa3/fa3_scheduler.cuh"

namespace fa::fa3 {

// Descale factors of one e4m3 tensor in device memory: the value of (batch b,
// head h) is ptr[b * batch_stride + h * head_stride]. Both strides 0: one
// descale for the whole tensor; batch_stride = heads, head_stride = 1: one per
// (batch, head). K and V are indexed by their own (kv) head. With descales per
// block of sequence rows (block_rows, kept beside: Fp8FwdParams, Fp8Args) the
// block holding row s adds s / block_rows (common/attn_params.h's DescaleView).
struct Fp8Descale {
  const float* ptr = nullptr;
  int64_t batch_stride = 0, head_stride = 0;
  __device__ __forceinline__ float at(int b, int h) const { return ptr[b * batch_stride + h * head_stride]; }
  __device__ __forceinline__ float at(int b, int h, int row, int block_rows) const {
    return ptr[b * batch_stride + h * head_stride + (block_rows ? row / block_rows : 0)];
  }
};

struct Fp8Args {  // CUtensorMap members carry their own 64-byte alignment
  // Q, K, V: BSHD codes; V^T: [batch, heads_kv, head_dim, seqlen_vt]. A kernel
  // reads tma_vt (V transposed by the pre-pass) or tma_v (transposed in the kernel).
  CUtensorMap tma_q, tma_k, tma_vt, tma_v;
  void* o;                           // bf16, BSHD
  float* lse;                        // [batch, heads, seqlen_q], natural log
  int batch, heads, heads_kv, seqlen_q, seqlen_k;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  float softmax_scale;  // of the dequantized scores; the kernel folds in q and k descales
  int causal;
  Fp8Descale q_descale, k_descale, v_descale;
  TileSchedule schedule;
  // Sequence rows per descale with block scaling (0 without), read only by the
  // kBlocks kernel; last, so the other fields keep the offsets the per-tile
  // kernel was tuned with.
  int q_block_rows, k_block_rows, v_block_rows;
  // Split tail (non-causal; fa3_fp8_fwd.cuh, fp8_split_plan): the list holds
  // num_items items; those from split_from on are pieces, split_k per tile, of
  // the tiles from split_from on (fp8_item_at). Without a split split_from =
  // num_items = schedule.num_tiles.
  int num_items, split_from, split_k;
  float* split_partials;  // per piece and consumer thread: O (head_dim / 2 floats), m[2], l[2]
  unsigned* split_counts;  // per split tile and consumer warp: pieces done (the last sets it back to 0)
  // V^T shared by the launch, made by its producer warps or by a maker kernel
  // beside it (fa3_fp8_vt_tasks.h); vt_sync null where the pre-pass wrote it. Its
  // words: fa3_fp8_vt_tasks.h. The blocks are read and written through tma_v
  // and tma_vt.
  unsigned* vt_sync;
  int vt_blocks, vt_group, vt_tasks;  // key blocks per pair; queue group; blocks in all
  // Causal: the rows by which every tile moves up (fa3_causal_balance.h,
  // causal_row_shift): tile m_block's first row is m_block * block_m - row_shift.
  // 0 without a mask.
  int row_shift;
  // O (bf16, BSHD) for the TMA stores of Fa3Fp8Traits::kTmaStoreO: 64 columns x
  // 64 rows per box. Last, so that the fields above keep their offsets.
  CUtensorMap tma_o;
};

// One item of the list: its tile and the K/V blocks [lo, hi) it visits; slot
// >= 0 names the split tile whose piece it is.
struct Fp8Item {
  TileCoord tc;
  int lo, hi, slot, piece;
};

// The first row of tile m_block (rows before 0: the shifted causal walk's
// empty warpgroups, Fp8Args::row_shift).
template <int BlockM>
__device__ __forceinline__ int fp8_tile_row0(int m_block, const Fp8Args& a) {
  return m_block * BlockM - a.row_shift;
}

// K/V blocks tile m_block visits (fa3_scheduler.cuh, tile_kv_blocks).
template <int BlockM, int BlockN>
__device__ __forceinline__ int fp8_kv_blocks(int m_block, const Fp8Args& a) {
  return tile_kv_blocks(m_block, BlockM, BlockN, a.seqlen_q, a.seqlen_k, a.causal, a.row_shift);
}

// Item idx of the list; the producer and consumers walk it alike.
template <int BlockM, int BlockN, typename Sched, bool kFastDiv>
__device__ __forceinline__ Fp8Item fp8_item_at(int idx, const Fp8Args& a) {
  Fp8Item it;
  int tile = idx;
  it.slot = -1, it.piece = 0;
  if (idx >= a.split_from) {
    const int r = idx - a.split_from;
    it.slot = r / a.split_k;
    it.piece = r - it.slot * a.split_k;
    tile = a.split_from + it.slot;
  }
  it.tc = Sched::template tile_at<kFastDiv>(tile, a);
  const int n = fp8_kv_blocks<BlockM, BlockN>(it.tc.m_block, a);
  it.lo = 0, it.hi = n;
  if (it.slot >= 0) it.lo = n * it.piece / a.split_k, it.hi = n * (it.piece + 1) / a.split_k;
  return it;
}

// Whether K/V block n needs the element mask: keys past seqlen_k, or (causal)
// keys some row of the tile may not see.
template <int BlockM, int BlockN>
__device__ __forceinline__ bool fp8_kv_block_needs_mask(int n, int m_block, const Fp8Args& a) {
  if ((n + 1) * BlockN > a.seqlen_k) return true;
  return a.causal && (n + 1) * BlockN - 1 > fp8_tile_row0<BlockM>(m_block, a) + a.seqlen_k - a.seqlen_q;
}

}  // namespace fa::fa3
