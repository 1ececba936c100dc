// The ring's merge kernel: folds one step's partial (O in bf16, LSE in float32)
// into the running float32 (O, LSE) of a GPU's Q shard, and on the last step
// writes the result (O in bf16, LSE in float32). The formula: lse_merge_math.h.
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

namespace fa::ring {

// Layouts: O tensors [batch, seqlen, heads, head_dim] (head_dim contiguous),
// LSE [batch, heads, seqlen]. The running pair and the outputs cover the whole
// shard (`seqlen` rows); the partial covers rows [part_begin, part_begin +
// part_rows) of it: its O is the shard-shaped buffer the attention call wrote at
// those rows, its LSE the call's own [batch, heads, part_rows].
struct MergeArgs {
  int batch = 0, heads = 0, head_dim = 0;
  int64_t seqlen = 0;
  // Rows this launch touches: [rows_begin, rows_begin + rows).
  int64_t rows_begin = 0, rows = 0;
  const void* o_part = nullptr;  // bf16, shard-shaped
  const float* lse_part = nullptr;
  int64_t part_begin = 0, part_rows = 0;  // part_rows 0: no partial this step
  float* o_acc = nullptr;   // float32 running O
  float* lse_acc = nullptr;  // float32 running LSE
  bool first = false;        // the running pair holds nothing yet: do not read it
  void* o_out = nullptr;     // bf16; with lse_out, non-null on the last step only
  float* lse_out = nullptr;
  bool negate_part_lse = false;  // planted fault (ring_forward.h): merge with -LSE
};

// Enqueues the merge on `stream`; returns cudaSuccess or the launch error.
// head_dim must be a multiple of 4 (each thread moves 4 elements).
cudaError_t launch_lse_merge(const MergeArgs&, cudaStream_t stream);

}  // namespace fa::ring
