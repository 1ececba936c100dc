// V^T made by the e4m3 fa3 forward itself, shared between its blocks: the
// order of the task queue and the words that say which V^T blocks are done.
// Host and device (no CUDA types), so that a CPU test holds the order
// (tests/test_fa3_fp8_vt_tasks.cpp); the kernel side is fa3_fp8_vt_tasks.cuh.
//
// A task is a key block of one (batch, kv head) pair, block_n keys x head_dim:
// V's rows read, V^T's columns written (the pre-pass's layout and key order,
// fa3_fp8_kernel.cuh), the block a K/V stage loads. Its count word counts 32-key
// units: it reaches block_n / 32 when the block is written (the makers add them
// at once; the queue's order can also list a block's units one by one). The
// queue lists the pairs in groups (the pairs whose tiles run in one round of
// the persistent list), each group's key blocks last first (the order every
// tile walks its blocks in), the group's pairs inside each block, a block's
// units innermost: so the blocks the first tiles need come first.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FA_VT_TASK_FN __host__ __device__ __forceinline__
#else
#define FA_VT_TASK_FN inline
#endif

namespace fa {

// Whether a tile of block_m query rows may make V^T with its producer warps
// (Fa3Fp8Traits' ShareVt): three consumer warpgroups only, since with two the
// producer holds 24 registers and the TMA thread's wait for a V^T block spilled
// its loop state; and V^T read from global memory (no in-kernel transpose).
constexpr bool fp8_tile_can_share_vt(int block_m, bool transpose_v) { return block_m / 64 == 3 && !transpose_v; }

struct Fp8VtTask {
  int pair;   // batch * heads_kv + kv head
  int block;  // key block of block_n keys
  int unit;   // 32-key unit inside the block
};

// Task t of the queue over `pairs` pairs of `blocks` key blocks of `units`
// 32-key units, `group` pairs per group. The caller skips units past the
// padded sequence (fp8_vt_block_units).
FA_VT_TASK_FN Fp8VtTask fp8_vt_task_at(int t, int pairs, int blocks, int units, int group) {
  // Unsigned: every value is >= 0, and unsigned division is the shorter code (the
  // producer warps that run this hold 32 registers).
  const unsigned per_group = unsigned(group) * unsigned(blocks) * unsigned(units);
  const unsigned g = unsigned(t) / per_group;
  const unsigned r = unsigned(t) - g * per_group;
  const unsigned first = g * unsigned(group);
  const unsigned left = unsigned(pairs) - first;
  const unsigned size = left < unsigned(group) ? left : unsigned(group);  // the last group may be short
  const unsigned per_block = size * unsigned(units);
  const unsigned j = r / per_block;  // blocks from the last
  const unsigned r2 = r - j * per_block;
  const unsigned pair_in = r2 / unsigned(units);
  return Fp8VtTask{int(first + pair_in), blocks - 1 - int(j), int(r2 - pair_in * unsigned(units))};
}

// 32-key units of key block `block` that hold keys of the padded V^T row
// (seqlen_vt keys, a multiple of 64): block_n / 32, fewer in the last block.
FA_VT_TASK_FN int fp8_vt_block_units(int block, int block_n, int seqlen_vt) {
  const int keys = seqlen_vt - block * block_n;
  return (keys < block_n ? keys : block_n) / 32;
}

// Pairs per group: those whose tiles the persistent list runs in one round.
// Non-causal, m_block fastest: ceil(grid / num_m_blocks) query heads; causal
// (fa3_scheduler.cuh, CausalOrder): the list's own group of group_bh query
// heads. Query heads share kv_group to a kv head.
inline int fp8_vt_task_group(bool causal, int grid, int num_m_blocks, int group_bh, int kv_group, int pairs) {
  const int q_pairs = causal ? group_bh : (grid + num_m_blocks - 1) / (num_m_blocks > 0 ? num_m_blocks : 1);
  int g = (q_pairs + kv_group - 1) / (kv_group > 0 ? kv_group : 1);
  if (g > pairs) g = pairs;
  return g < 1 ? 1 : g;
}

// Synchronisation words: the units done in all, then one count of units done
// per (pair, key block); padded to 256 bytes. Zeroed before each launch.
constexpr int kVtDoneWord = 0, kVtCountWords = 1;
inline int64_t fp8_vt_sync_words(int pairs, int blocks) { return kVtCountWords + int64_t(pairs) * blocks; }
inline int64_t fp8_vt_sync_bytes(int pairs, int blocks) { return (fp8_vt_sync_words(pairs, blocks) * 4 + 255) / 256 * 256; }

}  // namespace fa
