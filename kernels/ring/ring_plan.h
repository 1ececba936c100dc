// What one GPU does at one ring step, as data: which K/V buffer its attention
// reads (and its transfer sends), which buffer the transfer fills, the attention
// call, and the rows its merge touches. The driver (ring_forward.cu) enqueues
// exactly this; the CPU tests replay it on the host against one softmax.
#pragma once
#include <cstdint>
#include <vector>

#include "ring/zigzag.h"

namespace fa::ring {

// K/V buffers of a GPU: the caller's shard (only read) and two ring buffers that
// received shards alternate between.
constexpr int kKvInput = -1;

struct StepPlan {
  int read = kKvInput;  // the K/V the attention reads and the transfer sends
  int recv = -1;        // ring buffer (0, 1) the transfer fills; -1: no transfer (last step)
  std::vector<StepCall> calls;  // zigzag.h: at most one
  bool first = false;   // the running (O, LSE) holds nothing yet
  bool last = false;    // the merge writes the outputs
  int64_t merge_begin = 0, merge_rows = 0;  // rows the merge touches
  int64_t part_begin = 0, part_rows = 0;    // rows of the step's partial (0 rows: none)
};

// `skip_attention`: the planted fault that drops the step's attention call.
StepPlan plan_step(const Zigzag&, bool causal, int gpu, int step, bool skip_attention = false);

}  // namespace fa::ring
