#include "sweep/point_memory.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace fa {

namespace {
// Rows per reference / tolerance task (reference.cpp, metrics.cpp chunk at most 64).
constexpr double kChunk = 64;
}  // namespace

PointMemory point_memory(const AttnProblem& p, int64_t rows_checked, int threads, Backend backend,
                         bool user_inputs) {
  // Doubles: a hostile shape (seqlen 2^31 x 1024 heads) must not overflow the estimate.
  const double b = p.batch, h = p.heads, hk = p.heads_kv, nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  const double rows = double(std::min<int64_t>(rows_checked, p.seqlen_q));
  const double q = b * nq * h * d, kv = b * nk * hk * d, o = q, lse = b * h * nq;
  const double hw = std::max(1u, std::thread::hardware_concurrency());
  const double workers = threads > 0 ? threads : hw;
  PointMemory m;
  m.inputs = 4 * (q + 2 * kv) * (user_inputs ? 2 : 1);
  m.reference = 8 * (b * rows * h * d + b * h * rows) + 8 * rows  // O, LSE, the row list
                + 8 * 2 * nk * d                                  // K and V of one kv head in double
                + workers * 8 * kChunk * (nk + 3 * d);            // each worker's S^T block, Q and O chunks
  m.tolerance = hw * 4 * kChunk * (nk + 2 * d);
  m.outputs = 4 * (o + lse);
  m.backend = backend == Backend::cpu ? 4 * (q + 2 * kv + o + lse) : 2 * std::max(q, kv);
  return m;
}

std::string PointMemory::describe() const {
  constexpr double gib = double(1 << 30);
  return fmt::format("{:.3g} GiB (inputs {:.3g}, float64 reference {:.3g}, tolerance pass {:.3g}, outputs {:.3g}, "
                     "back-end buffers {:.3g})",
                     total() / gib, inputs / gib, reference / gib, tolerance / gib, outputs / gib, backend / gib);
}

}  // namespace fa
