// The float64 reference. For a chunk of query rows of one head it computes
// S^T = K Q_chunk^T and O = P^T V as two Eigen GEMMs in double over the keys the
// chunk can see, so a sampled check at seqlen 65536 costs rows * N * d, not N^2 * d.
#include "reference/reference.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "core/errors.h"
#include "core/parallel.h"
#include "reference/dense.h"

namespace fa {

using ref::ColMatD;
using ref::MatD;

ReferenceOutputs reference_forward(const AttnProblem& p, const HostInputs& in,
                                   std::vector<int64_t> rows, int threads) {
  if (auto why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("reference_forward: {}", why));
  const int64_t d = p.head_dim, nq = p.seqlen_q, nk = p.seqlen_k;
  const size_t q_elems = size_t(p.batch) * nq * p.heads * d;
  const size_t kv_elems = size_t(p.batch) * nk * p.heads_kv * d;
  if (in.q.size() != q_elems || in.k.size() != kv_elems || in.v.size() != kv_elems)
    throw UsageError(fmt::format(
        "reference_forward: input sizes q={} k={} v={} do not match {} (want q={} k=v={})",
        in.q.size(), in.k.size(), in.v.size(), p.describe(), q_elems, kv_elems));

  rows = ref::checked_indices(std::move(rows), nq, "reference_forward: row");
  const int64_t n_rows = int64_t(rows.size());

  ReferenceOutputs out;
  out.rows = rows;
  out.o.assign(size_t(p.batch) * n_rows * p.heads * d, 0.0);
  out.lse.assign(size_t(p.batch) * p.heads * n_rows, 0.0);

  // The exact scale, not the float32 one the kernels are given (for head_dim
  // 128 they differ in the 8th digit).
  const double scale = p.scale_f64();
  const int group = p.heads / p.heads_kv;
  const int64_t chunk_rows = ref::rows_per_chunk(n_rows, group, threads);
  const int64_t n_chunks = (n_rows + chunk_rows - 1) / chunk_rows;
  const double neg_inf = -std::numeric_limits<double>::infinity();

  // K/V are converted to double once per (batch, kv head) and shared by the
  // `group` query heads that read them; the row chunks of those heads run in parallel.
  for (int b = 0; b < p.batch; ++b) {
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      const MatD kd = ref::load_head(in.k, nk, p.heads_kv, int(d), b, hk);
      const MatD vd = ref::load_head(in.v, nk, p.heads_kv, int(d), b, hk);
      parallel_for(int64_t(group) * n_chunks, threads, [&](int64_t task, int) {
        const int h = hk * group + int(task / n_chunks);
        const int64_t c0 = (task % n_chunks) * chunk_rows;
        const int64_t cn = std::min(chunk_rows, n_rows - c0);
        // Keys visible to the chunk: rows ascend, so the last row sees the most.
        const int64_t n_vis = p.keys_seen(rows[c0 + cn - 1]);

        ColMatD qc(d, cn);  // scaled query rows as columns
        for (int64_t c = 0; c < cn; ++c) {
          const float* q = in.q.data() + ((int64_t(b) * nq + rows[c0 + c]) * p.heads + h) * d;
          for (int64_t e = 0; e < d; ++e) qc(e, c) = double(q[e]) * scale;
        }
        ColMatD pt(n_vis, cn);  // S^T, then P^T (unnormalised, masked entries 0)
        if (n_vis > 0) pt.noalias() = kd.topRows(n_vis) * qc;
        std::vector<double> inv_l(cn, 0.0);
        for (int64_t c = 0; c < cn; ++c) {
          const int64_t seen = p.keys_seen(rows[c0 + c]);
          double& lse = out.lse[(size_t(b) * p.heads + h) * n_rows + c0 + c];
          auto col = pt.col(c);
          if (seen == 0) {
            col.setZero();
            lse = neg_inf;
            continue;
          }
          // PropagateNaN: a NaN score (non-finite inputs) must reach O and LSE, not vanish from the max.
          const double m = col.head(seen).maxCoeff<Eigen::PropagateNaN>();
          col.head(seen) = (col.head(seen).array() - m).exp();
          col.tail(n_vis - seen).setZero();
          const double l = col.head(seen).sum();
          lse = m + std::log(l);
          inv_l[c] = 1.0 / l;
        }
        if (n_vis == 0) return;  // every row in the chunk sees nothing: O stays 0
        ColMatD oc = vd.topRows(n_vis).transpose() * pt;  // [d, cn]
        for (int64_t c = 0; c < cn; ++c) {
          double* o = out.o.data() + ((size_t(b) * n_rows + c0 + c) * p.heads + h) * d;
          for (int64_t e = 0; e < d; ++e) o[e] = oc(e, c) * inv_l[c];
        }
      });
    }
  }
  return out;
}

}  // namespace fa
