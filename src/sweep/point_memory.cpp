#include "sweep/point_memory.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace fa {

namespace {
// Rows (columns) per reference / tolerance task: reference.cpp, metrics.cpp and
// the gradient passes (reference/attention_grad.cpp, check/standard_bwd.cpp)
// chunk at most 64, and the gradients' columns pass multiplies 256 rows at once.
constexpr double kChunk = 64;
constexpr double kRowsPerStep = 256;
}  // namespace

PointMemory point_memory(const AttnProblem& p, int64_t rows_checked, std::optional<int64_t> cols_checked,
                         int threads, Backend backend, bool user_inputs) {
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
  // cuda: the standard's O and LSE on the checked rows come back from the GPU (check/standard_gpu.h).
  if (backend == Backend::cuda) m.tolerance = std::max(m.tolerance, 4 * (b * rows * h * d + b * h * rows));
  if (p.dtype == DType::e4m3) {
    m.inputs += 4 * (q + 2 * kv) + (q + 2 * kv);           // the unquantized copy, the codes
    m.reference += 8 * (b * rows * h * d + b * h * rows);  // the reference on the unquantized inputs
    m.tolerance += hw * 4 * kChunk * (nk + d);             // the FP8 standard's magnitude blocks
  }
  if (!cols_checked) return m;

  // A backward row: one float64 pass gives the forward rows and the gradients.
  const double cols = double(std::min<int64_t>(*cols_checked, p.seqlen_k));
  const double grads = b * rows * h * d + 2 * b * cols * hk * d;  // dQ on the rows, dK and dV on the columns
  m.inputs += 4 * q;                                               // dO, generated for the point
  // cuda: the reference gradients, the standard backward and the comparisons
  // stay on the device (check/validate.h); nothing of them comes to the host.
  if (backend == Backend::cuda) return m;
  m.reference += 8 * cols + 8 * grads                              // the column list, the gradients
                 + 8 * (2 * nq * d + 2 * nq)                       // one query head's Q, dO, LSE, D in double
                 + workers * 8 * (kChunk * (2 * nk + 3 * d)        // rows pass: P^T, dS^T, dO and dQ chunks
                                  + kChunk * (4 * d + 2 * kRowsPerStep));  // columns pass: K, V, dK, dV, P, dS
  // The standard backward (once per point, after the forward tolerance pass):
  // its statistics, its gradients in double, the group sums and its workers' blocks.
  const double standard = 4 * 3 * b * h * nq + 8 * grads + 4 * 2 * cols * d +
                          workers * 4 * (kChunk * (3 * nk + 3 * d) + kChunk * (4 * d + 2 * kRowsPerStep));
  m.tolerance = std::max(m.tolerance, standard);
  m.outputs = 2 * 4 * (o + lse) + 4 * (q + 2 * kv);  // the partner's O and LSE, kept and refetched; dQ, dK, dV
  if (backend == Backend::cpu) m.backend += 4 * (2 * q + 2 * kv);  // dO, dQ, dK, dV
  return m;
}

std::string PointMemory::describe() const {
  constexpr double gib = double(1 << 30);
  return fmt::format("{:.3g} GiB (inputs {:.3g}, float64 reference {:.3g}, tolerance pass {:.3g}, outputs {:.3g}, "
                     "back-end buffers {:.3g})",
                     total() / gib, inputs / gib, reference / gib, tolerance / gib, outputs / gib, backend / gib);
}

}  // namespace fa
