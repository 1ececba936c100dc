// V^T made by the e4m3 fa3 forward itself, shared between its blocks: the
// order of the task queue and the words that say which V^T blocks are done.
// Host and device (no CUDA types), so that a CPU test holds the order
// (tests/test_fa3_fp8_vt_tasks.cpp); the kernel side is fa3_fp8_vt_tasks.cuh.
//
// A task is a key block of one (batch, kv head) pair, block_n keys x head_dim:
// V's rows read, V^T's columns written (the pre-pass's layout and key order,
// fa3_fp8_kernel.cuh), the block a K/V stage loads. Its count word is 1 once
// the block is written. The queue lists the pairs in groups (the pairs whose
// tiles run in one round of the persistent list), each group's key blocks last
// first (the order every tile walks its blocks in), the group's pairs inside
// each block: so the blocks the first tiles need come first.
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
};

// Task t of the queue over `pairs` pairs of `blocks` key blocks, `group` pairs
// per group.
FA_VT_TASK_FN Fp8VtTask fp8_vt_task_at(int t, int pairs, int blocks, int group) {
  // Unsigned: every value is >= 0, and unsigned division is the shorter code (the
  // producer warps that run this hold 32 registers).
  const unsigned per_group = unsigned(group) * unsigned(blocks);
  const unsigned g = unsigned(t) / per_group;
  const unsigned r = unsigned(t) - g * per_group;
  const unsigned first = g * unsigned(group);
  const unsigned left = unsigned(pairs) - first;
  const unsigned size = left < unsigned(group) ? left : unsigned(group);  // the last group may be short
  const unsigned j = r / size;  // blocks from the last
  return Fp8VtTask{int(first + (r - j * size)), blocks - 1 - int(j)};
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

// Synchronisation words: the blocks done in all, the queue's next block (the
// producer warps' team takes blocks by it; the maker kernel's teams do not use
// it), then one count per (pair, key block), 1 once it is done; padded to 256
// bytes. Zeroed before each launch.
constexpr int kVtDoneWord = 0, kVtQueueWord = 1, kVtCountWords = 2;
inline int64_t fp8_vt_sync_words(int pairs, int blocks) { return kVtCountWords + int64_t(pairs) * blocks; }
inline int64_t fp8_vt_sync_bytes(int pairs, int blocks) { return (fp8_vt_sync_words(pairs, blocks) * 4 + 255) / 256 * 256; }

}  // namespace fa
