// The float64 reference gradients. Per (batch, kv head), K and V become double
// once; then per query head of the group, in order (so dK, dV sum the group
// in a fixed order whatever the thread count):
//   rows pass    - chunks of every row: S^T = K (scale Q_chunk)^T and O^T = V^T P^T
//                  as GEMMs give LSE_i and D_i = dO_i . O_i; the chunk's sampled
//                  rows then get dP^T = V dO^T, dS = P * (dP - D), dQ^T = scale K^T dS^T;
//   columns pass - chunks of the sampled columns C, streamed over the rows that
//                  see them: S = K_C (scale Q_rows)^T, P = exp(S - LSE),
//                  dP = V_C dO^T, dV_C += P dO, dK_C += dS (scale Q).
// Each task owns its rows or columns, so nothing is shared between threads.
#include "reference/attention_grad.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "core/errors.h"
#include "reference/dense.h"
#include "core/parallel.h"

namespace fa {
namespace {

using ref::ColMatD;
using ref::MatD;
using RowVecD = Eigen::Matrix<double, 1, Eigen::Dynamic>;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
// Fixed chunk sizes (not scaled to the thread count): every GEMM has the same
// shape whatever the threads, so the result does not depend on them.
constexpr int64_t kRowsPerChunk = 64;  // rows pass: columns of one S^T GEMM
constexpr int64_t kColsPerChunk = 64;  // columns pass: rows of one S GEMM
constexpr int64_t kRowsPerStep = 256;  // columns pass: rows multiplied at once

// One query head of one batch: its inputs as doubles and, after the rows
// pass, every row's LSE and D (-inf and 0 for a row that sees no key).
struct QueryHead {
  int b = 0, h = 0;
  MatD qs;    // scale * Q, [seqlen_q, d]: S = K qs^T and dK = dS qs need no further scaling
  MatD dout;  // [seqlen_q, d]
  std::vector<double> lse, delta;
};

// The inputs of one (batch, kv head).
struct KvHead {
  int b = 0, hk = 0;
  MatD k, v;  // [seqlen_k, d]
};

void check_sizes(const AttnProblem& p, const HostInputs& in) {
  const size_t q_elems = size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
  const size_t kv_elems = size_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
  if (in.q.size() != q_elems || in.k.size() != kv_elems || in.v.size() != kv_elems ||
      in.dout.size() != q_elems)
    throw UsageError(fmt::format(
        "reference_backward: input sizes q={} k={} v={} dout={} do not match {} (want q=dout={} "
        "k=v={})",
        in.q.size(), in.k.size(), in.v.size(), in.dout.size(), p.describe(), q_elems, kv_elems));
}

// Every row's LSE and D (and O, LSE into `forward`, and on `rows` into
// `forward_rows`); dQ of the rows in `rows`.
void rows_pass(const AttnProblem& p, const KvHead& kv, QueryHead& qh, const std::vector<int64_t>& rows,
               SampledGrads& g, HostOutputs* forward, ReferenceOutputs* forward_rows, int threads) {
  const int64_t nq = p.seqlen_q, d = p.head_dim, n_rows = int64_t(rows.size());
  const double scale = p.scale_f64();
  const int64_t chunk = kRowsPerChunk, n_chunks = (nq + chunk - 1) / chunk;
  parallel_for(n_chunks, threads, [&](int64_t task, int) {
    const int64_t r0 = task * chunk, cn = std::min(chunk, nq - r0);
    const int64_t n_vis = p.keys_seen(r0 + cn - 1);  // the chunk's last row sees the most
    ColMatD pt(n_vis, cn);  // S^T, then P^T (masked entries 0)
    if (n_vis > 0) pt.noalias() = kv.k.topRows(n_vis) * qh.qs.middleRows(r0, cn).transpose();
    for (int64_t c = 0; c < cn; ++c) {
      const int64_t seen = p.keys_seen(r0 + c);
      auto col = pt.col(c);
      if (seen == 0) {
        col.setZero();
        qh.lse[r0 + c] = kNegInf;
        continue;
      }
      // PropagateNaN: a NaN score (non-finite inputs) must reach LSE and the gradients, not vanish from the max.
      const double m = col.head(seen).maxCoeff<Eigen::PropagateNaN>();
      col.head(seen) = (col.head(seen).array() - m).exp();
      col.tail(n_vis - seen).setZero();
      const double l = col.head(seen).sum();
      qh.lse[r0 + c] = m + std::log(l);
      col.head(seen) /= l;
    }
    ColMatD ot = ColMatD::Zero(d, cn);  // O^T
    if (n_vis > 0) ot.noalias() = kv.v.topRows(n_vis).transpose() * pt;
    for (int64_t c = 0; c < cn; ++c) qh.delta[r0 + c] = qh.dout.row(r0 + c).dot(ot.col(c).transpose());

    if (forward) {
      for (int64_t c = 0; c < cn; ++c) {
        float* o = forward->o.data() + ((int64_t(qh.b) * nq + r0 + c) * p.heads + qh.h) * d;
        for (int64_t e = 0; e < d; ++e) o[e] = float(ot(e, c));
        forward->lse[(int64_t(qh.b) * p.heads + qh.h) * nq + r0 + c] = float(qh.lse[r0 + c]);
      }
    }

    // The chunk's sampled rows (a row that sees no key keeps dQ = 0).
    const auto lo = std::lower_bound(rows.begin(), rows.end(), r0);
    const auto hi = std::lower_bound(lo, rows.end(), r0 + cn);
    const int64_t ns = hi - lo;
    if (forward_rows) {
      const int64_t first = lo - rows.begin();
      for (int64_t s = 0; s < ns; ++s) {
        double* o = forward_rows->o.data() + ((int64_t(qh.b) * n_rows + first + s) * p.heads + qh.h) * d;
        for (int64_t e = 0; e < d; ++e) o[e] = ot(e, lo[s] - r0);
        forward_rows->lse[(int64_t(qh.b) * p.heads + qh.h) * n_rows + first + s] = qh.lse[lo[s]];
      }
    }
    if (ns == 0 || n_vis == 0) return;
    ColMatD ps(n_vis, ns);
    MatD dos(ns, d);
    RowVecD ds_delta(ns);
    for (int64_t s = 0; s < ns; ++s) {
      const int64_t r = lo[s];
      ps.col(s) = pt.col(r - r0);
      dos.row(s) = qh.dout.row(r);
      ds_delta(s) = qh.delta[r];
    }
    ColMatD dst = kv.v.topRows(n_vis) * dos.transpose();           // dP^T
    dst = ps.array() * (dst.array().rowwise() - ds_delta.array());  // dS^T
    const ColMatD dqt = kv.k.topRows(n_vis).transpose() * dst;      // dQ^T / scale
    const int64_t first = lo - rows.begin();
    for (int64_t s = 0; s < ns; ++s) {
      double* dq = g.dq.data() + ((int64_t(qh.b) * n_rows + first + s) * p.heads + qh.h) * d;
      for (int64_t e = 0; e < d; ++e) dq[e] = scale * dqt(e, s);
    }
  });
}

// Adds this query head's share of dK and dV on `cols`.
void cols_pass(const AttnProblem& p, const KvHead& kv, const QueryHead& qh,
               const std::vector<int64_t>& cols, SampledGrads& g, int threads) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim, n_cols = int64_t(cols.size());
  const int64_t chunk = kColsPerChunk, n_chunks = (n_cols + chunk - 1) / chunk;
  parallel_for(n_chunks, threads, [&](int64_t task, int) {
    const int64_t c0 = task * chunk, cn = std::min(chunk, n_cols - c0);
    const auto first_col = cols.begin() + c0, end_col = first_col + cn;
    const MatD kc = ref::gather_rows<MatD>(kv.k, cols.data() + c0, cn);
    const MatD vc = ref::gather_rows<MatD>(kv.v, cols.data() + c0, cn);
    MatD dk = MatD::Zero(cn, d), dv = MatD::Zero(cn, d);
    for (int64_t r0 = ref::first_row_seeing(p, *first_col); r0 < nq; r0 += kRowsPerStep) {
      const int64_t rn = std::min(kRowsPerStep, nq - r0);
      ColMatD pm = kc * qh.qs.middleRows(r0, rn).transpose();  // S, then P: [cn, rn]
      for (int64_t r = 0; r < rn; ++r) {
        const double lse = qh.lse[r0 + r];
        // Columns ascend, so those row r0 + r sees are a prefix of the chunk.
        const int64_t seen =
            std::isinf(lse) ? 0
            : p.causal      ? std::upper_bound(first_col, end_col, r0 + r + nk - nq) - first_col
                            : cn;
        auto col = pm.col(r);
        col.head(seen) = (col.head(seen).array() - lse).exp();
        col.tail(cn - seen).setZero();
      }
      const auto dout = qh.dout.middleRows(r0, rn);
      ColMatD dsm = vc * dout.transpose();  // dP, then dS
      dv.noalias() += pm * dout;
      const Eigen::Map<const RowVecD> delta(qh.delta.data() + r0, rn);
      dsm = pm.array() * (dsm.array().rowwise() - delta.array());
      dk.noalias() += dsm * qh.qs.middleRows(r0, rn);
    }
    for (int64_t c = 0; c < cn; ++c) {
      const size_t at = ((size_t(kv.b) * n_cols + c0 + c) * p.heads_kv + kv.hk) * d;
      for (int64_t e = 0; e < d; ++e) {
        g.dk[at + e] += dk(c, e);
        g.dv[at + e] += dv(c, e);
      }
    }
  });
}

}  // namespace

SampledGrads reference_backward(const AttnProblem& p, const HostInputs& in, std::vector<int64_t> rows,
                                std::vector<int64_t> cols, int threads, HostOutputs* forward,
                                ReferenceOutputs* forward_rows) {
  if (auto why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("reference_backward: {}", why));
  check_sizes(p, in);
  const int64_t d = p.head_dim, nq = p.seqlen_q, nk = p.seqlen_k;
  SampledGrads g;
  g.rows = ref::checked_indices(std::move(rows), nq, "reference_backward: row");
  g.cols = ref::checked_indices(std::move(cols), nk, "reference_backward: column");
  g.dq.assign(size_t(p.batch) * g.rows.size() * p.heads * d, 0.0);
  g.dk.assign(size_t(p.batch) * g.cols.size() * p.heads_kv * d, 0.0);
  g.dv.assign(g.dk.size(), 0.0);
  if (forward) {
    forward->o.assign(in.q.size(), 0.f);
    forward->lse.assign(size_t(p.batch) * p.heads * nq, 0.f);
  }
  if (forward_rows) {
    forward_rows->rows = g.rows;
    forward_rows->o.assign(size_t(p.batch) * g.rows.size() * p.heads * d, 0.0);
    forward_rows->lse.assign(size_t(p.batch) * p.heads * g.rows.size(), 0.0);
  }

  const int group = p.heads / p.heads_kv;
  for (int b = 0; b < p.batch; ++b) {
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      const KvHead kv{b, hk, ref::load_head(in.k, nk, p.heads_kv, int(d), b, hk),
                      ref::load_head(in.v, nk, p.heads_kv, int(d), b, hk)};
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        QueryHead qh{b, h, ref::load_head(in.q, nq, p.heads, int(d), b, h, p.scale_f64()),
                     ref::load_head(in.dout, nq, p.heads, int(d), b, h), std::vector<double>(nq),
                     std::vector<double>(nq)};
        rows_pass(p, kv, qh, g.rows, g, forward, forward_rows, threads);
        cols_pass(p, kv, qh, g.cols, g, threads);
      }
    }
  }
  return g;
}

}  // namespace fa
