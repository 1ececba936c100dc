#include "ring/ring_plan.h"

namespace fa::ring {

// Step s reads the shard received at step s - 1, so received shards alternate
// between ring buffers (s - 1) % 2 and s % 2: the transfer of step s fills the
// buffer the attention of step s - 1 read, never the one step s reads.
StepPlan plan_step(const Zigzag& z, bool causal, int gpu, int step, bool skip_attention) {
  StepPlan p;
  p.read = step == 0 ? kKvInput : (step - 1) % 2;
  p.recv = step + 1 < z.gpus ? step % 2 : -1;
  if (!skip_attention) p.calls = step_calls(z, causal, gpu, step);
  p.first = step == 0;
  p.last = step == z.gpus - 1;
  for (const StepCall& c : p.calls) {
    p.part_begin = c.q_begin;
    p.part_rows = c.q_rows;
  }
  if (p.last) {  // every row is written out, those this step does not touch too
    p.merge_begin = 0;
    p.merge_rows = z.rows_per_gpu();
  } else {
    p.merge_begin = p.part_begin;
    p.merge_rows = p.part_rows;
  }
  return p;
}

}  // namespace fa::ring
