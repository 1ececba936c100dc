// Where the sequence lives on a ring of N GPUs, and what each GPU computes at
// each ring step.
//
// The sequence is cut into 2N equal chunks; GPU r holds chunks r and 2N-1-r, in
// that order, as one local shard of 2 * chunk rows (Q, K and V alike). Under a
// causal mask chunk c sees chunks 0..c, so a contiguous split would leave GPU 0
// one chunk's work and GPU N-1 N chunks'; pairing an early chunk with a late one
// ("zigzag") gives every GPU the same work at every step. Non-causal attention
// uses the same layout (its work is balanced under any split).
//
// Step s: GPU r holds the K/V shard of GPU (r - s) mod N (it passes its K/V to
// r + 1 and receives from r - 1 between steps), and attends its whole Q shard to
// that K/V where the mask lets it. Host-only: the driver and the tests share it.
#pragma once
#include <cstdint>
#include <vector>

namespace fa::ring {

struct Zigzag {
  int gpus = 1;        // N
  int64_t chunk = 1;   // rows per chunk; a GPU holds 2 * chunk rows

  int64_t rows_per_gpu() const { return 2 * chunk; }
  int64_t seqlen() const { return 2 * chunk * gpus; }
  // Chunk (0 .. 2N-1) held in half `half` (0, 1) of GPU `gpu`'s shard.
  int chunk_of(int gpu, int half) const { return half == 0 ? gpu : 2 * gpus - 1 - gpu; }
  // Row of the whole sequence stored at `local_row` of `gpu`'s shard.
  int64_t global_row(int gpu, int64_t local_row) const;
  struct Place {
    int gpu;
    int64_t local_row;
  };
  Place place(int64_t global_row) const;
  // The GPU whose K/V shard `gpu` holds at ring step `step` (0 .. N-1).
  int kv_owner(int gpu, int step) const { return ((gpu - step) % gpus + gpus) % gpus; }
};

// How chunk q_chunk's queries see chunk kv_chunk's keys: all of them, the lower
// triangle (the same chunk under causal), or none.
enum class PairKind { full, diagonal, skipped };
PairKind pair_kind(int q_chunk, int kv_chunk, bool causal);

// One attention call of a step: local rows [q_begin, q_begin + q_rows) of the Q
// shard against rows [kv_begin, kv_begin + kv_rows) of the K/V shard held then;
// causal (q and kv the same rows of the same chunks) or not.
struct StepCall {
  int64_t q_begin, q_rows, kv_begin, kv_rows;
  bool causal;
};

// The calls GPU `gpu` makes at ring step `step`. Zigzag makes it one call:
//  - non-causal: the whole Q shard against the whole K/V shard;
//  - causal, step 0 (its own K/V): one causal call on the whole shard; its
//    chunks keep their global order (r < 2N-1-r), so the causal mask of the
//    2-chunk shard is the global one: two diagonal pairs and one full pair;
//  - causal, K/V of GPU j < r: chunk j is before both of r's chunks and chunk
//    2N-1-j after both: the whole Q shard against the first K/V half;
//  - causal, K/V of GPU j > r: chunk r is before both of j's chunks and
//    chunk 2N-1-r after both: the second Q half against the whole K/V shard.
// Each is 2 * chunk^2 visible (query, key) pairs, so no GPU waits on another.
std::vector<StepCall> step_calls(const Zigzag&, bool causal, int gpu, int step);

}  // namespace fa::ring
