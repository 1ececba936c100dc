#include "ring/zigzag.h"

namespace fa::ring {

int64_t Zigzag::global_row(int gpu, int64_t local_row) const {
  const int half = local_row < chunk ? 0 : 1;
  return int64_t(chunk_of(gpu, half)) * chunk + (local_row - half * chunk);
}

Zigzag::Place Zigzag::place(int64_t global_row) const {
  const int c = int(global_row / chunk);
  const int64_t offset = global_row % chunk;
  if (c < gpus) return {c, offset};
  return {2 * gpus - 1 - c, chunk + offset};
}

PairKind pair_kind(int q_chunk, int kv_chunk, bool causal) {
  if (!causal || kv_chunk < q_chunk) return PairKind::full;
  return kv_chunk == q_chunk ? PairKind::diagonal : PairKind::skipped;
}

std::vector<StepCall> step_calls(const Zigzag& z, bool causal, int gpu, int step) {
  const int64_t c = z.chunk, rows = z.rows_per_gpu();
  if (!causal) return {{0, rows, 0, rows, false}};
  const int owner = z.kv_owner(gpu, step);
  if (owner == gpu) return {{0, rows, 0, rows, true}};
  if (owner < gpu) return {{0, rows, 0, c, false}};
  return {{c, c, 0, rows, false}};
}

}  // namespace fa::ring
