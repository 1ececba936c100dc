// The standard backward in the dtype, organised like the float64 reference
// (reference/attention_grad.cpp): per query head a statistics pass over every
// row (m, l and D; its own function), a rows pass over the sampled rows (dQ)
// and a columns pass over the sampled columns (dK, dV), all as float32 Eigen
// GEMMs on row or column chunks.
#include "check/standard_bwd.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "check/dtype_round.h"
#include "core/errors.h"
#include "reference/dense.h"
#include "core/parallel.h"

namespace fa {
namespace {

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using RowVecF = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using MapF = Eigen::Map<const MatF, 0, Eigen::OuterStride<>>;

constexpr int64_t kRowsPerChunk = 64;  // rows pass: columns of one S^T GEMM
constexpr int64_t kColsPerChunk = 64;  // columns pass: rows of one S GEMM
constexpr int64_t kRowsPerStep = 256;  // columns pass: rows multiplied at once

// Head h of batch b of a [batch, seqlen, heads, d] tensor, without a copy.
MapF head_view(const std::vector<float>& t, int64_t seqlen, int heads, int d, int b, int h) {
  return MapF(t.data() + (int64_t(b) * seqlen * heads + h) * d, seqlen, d,
              Eigen::OuterStride<>(int64_t(heads) * d));
}

template <typename M>
void store(M& m, DType dtype) {  // "stored in the dtype": rounded in place
  round_in_place(m.data(), m.size(), dtype);
}

struct Problem {
  const AttnProblem& p;
  const std::vector<int64_t>& rows;
  const std::vector<int64_t>& cols;
  int threads;
};

// One query head: its views and its rows' statistics (StandardStats: m, l, D).
struct QueryHead {
  int b, h;
  MapF q, dout;
  const float* m;
  const float* l;
  const float* delta;
};

struct KvHead {
  int b, hk;
  MapF k, v;
};

// Every row's m, l and D of one query head: S^T = K Q_chunk^T and dP^T = V dO_chunk^T,
// stored, per chunk of rows. D = rowsum(P o dP) over the stored P and dP, as a
// framework's softmax backward forms it: it does not depend on O.
void stats_pass(const AttnProblem& p, const KvHead& kv, const MapF& q, const MapF& dout, float* m,
                float* l, float* delta, int threads) {
  const int64_t nq = p.seqlen_q;
  const float scale = p.scale();
  const int64_t n_chunks = (nq + kRowsPerChunk - 1) / kRowsPerChunk;
  parallel_for(n_chunks, threads, [&](int64_t task, int) {
    const int64_t r0 = task * kRowsPerChunk, cn = std::min(kRowsPerChunk, nq - r0);
    const int64_t n_vis = p.keys_seen(r0 + cn - 1);
    ColMatF st(n_vis, cn), dpt(n_vis, cn);
    if (n_vis > 0) {
      st.noalias() = kv.k.topRows(n_vis) * q.middleRows(r0, cn).transpose();
      st *= scale;
      store(st, p.dtype);
      dpt.noalias() = kv.v.topRows(n_vis) * dout.middleRows(r0, cn).transpose();
      store(dpt, p.dtype);
    }
    for (int64_t c = 0; c < cn; ++c) {
      const int64_t r = r0 + c, seen = p.keys_seen(r);
      if (seen == 0) {
        m[r] = 0.f, l[r] = 0.f, delta[r] = 0.f;
        continue;
      }
      auto col = st.col(c).head(seen);
      m[r] = col.maxCoeff();
      l[r] = (col.array() - m[r]).exp().sum();
      Eigen::VectorXf pr = (col.array() - m[r]).exp() / l[r];
      store(pr, p.dtype);
      delta[r] = pr.dot(dpt.col(c).head(seen));
    }
  });
}

// dQ of the sampled rows, in chunks of consecutive entries of `rows`: their S
// recomputed (the same stored values the statistics came from), P from m and l.
void rows_pass(const Problem& pr, const KvHead& kv, const QueryHead& qh, SampledGrads& g) {
  const AttnProblem& p = pr.p;
  const int64_t d = p.head_dim, n_rows = int64_t(pr.rows.size());
  const float scale = p.scale();
  const int64_t n_chunks = (n_rows + kRowsPerChunk - 1) / kRowsPerChunk;
  parallel_for(n_chunks, pr.threads, [&](int64_t task, int) {
    const int64_t s0 = task * kRowsPerChunk, ns = std::min(kRowsPerChunk, n_rows - s0);
    const int64_t* rows = pr.rows.data() + s0;
    const int64_t n_vis = p.keys_seen(rows[ns - 1]);  // rows ascend: the last sees the most
    if (n_vis == 0) return;  // a row that sees no key: dQ = 0
    const MatF qs = ref::gather_rows<MatF>(qh.q, rows, ns);
    ColMatF pt = kv.k.topRows(n_vis) * qs.transpose();  // S^T stored, then P^T
    pt *= scale;
    store(pt, p.dtype);
    MatF dos(ns, d);
    RowVecF delta(ns);
    for (int64_t s = 0; s < ns; ++s) {
      const int64_t r = rows[s], seen = p.keys_seen(r);
      auto col = pt.col(s);
      if (seen > 0) col.head(seen) = (col.head(seen).array() - qh.m[r]).exp() / qh.l[r];
      col.tail(n_vis - seen).setZero();
      dos.row(s) = qh.dout.row(r);
      delta(s) = qh.delta[r];
    }
    store(pt, p.dtype);                                       // P
    ColMatF dst = kv.v.topRows(n_vis) * dos.transpose();      // dP^T
    store(dst, p.dtype);
    dst = pt.array() * (dst.array().rowwise() - delta.array());  // dS^T
    store(dst, p.dtype);
    ColMatF dqt = kv.k.topRows(n_vis).transpose() * dst;
    dqt *= scale;
    store(dqt, p.dtype);  // dQ
    for (int64_t s = 0; s < ns; ++s) {
      double* dq = g.dq.data() + ((int64_t(qh.b) * n_rows + s0 + s) * p.heads + qh.h) * d;
      for (int64_t e = 0; e < d; ++e) dq[e] = dqt(e, s);
    }
  });
}

// Adds this query head's stored dK_h, dV_h on the sampled columns to the
// group's float32 sums gk, gv ([cols, d]).
void cols_pass(const Problem& pr, const KvHead& kv, const QueryHead& qh, std::vector<float>& gk,
               std::vector<float>& gv) {
  const AttnProblem& p = pr.p;
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  const int64_t n_cols = int64_t(pr.cols.size());
  const float scale = p.scale();
  const int64_t n_chunks = (n_cols + kColsPerChunk - 1) / kColsPerChunk;
  parallel_for(n_chunks, pr.threads, [&](int64_t task, int) {
    const int64_t c0 = task * kColsPerChunk, cn = std::min(kColsPerChunk, n_cols - c0);
    const auto first_col = pr.cols.begin() + c0, end_col = first_col + cn;
    const MatF kc = ref::gather_rows<MatF>(kv.k, pr.cols.data() + c0, cn);
    const MatF vc = ref::gather_rows<MatF>(kv.v, pr.cols.data() + c0, cn);
    MatF dk = MatF::Zero(cn, d), dv = MatF::Zero(cn, d);
    for (int64_t r0 = ref::first_row_seeing(p, *first_col); r0 < nq; r0 += kRowsPerStep) {
      const int64_t rn = std::min(kRowsPerStep, nq - r0);
      const auto q = qh.q.middleRows(r0, rn);
      const auto dout = qh.dout.middleRows(r0, rn);
      ColMatF pm = kc * q.transpose();  // S, then P: [cn, rn]
      pm *= scale;
      store(pm, p.dtype);
      for (int64_t r = 0; r < rn; ++r) {
        const int64_t i = r0 + r;
        const int64_t seen = qh.l[i] == 0.f ? 0
                             : p.causal     ? std::upper_bound(first_col, end_col, i + nk - nq) - first_col
                                            : cn;
        auto col = pm.col(r);
        col.head(seen) = (col.head(seen).array() - qh.m[i]).exp() / qh.l[i];
        col.tail(cn - seen).setZero();
      }
      store(pm, p.dtype);
      ColMatF dsm = vc * dout.transpose();  // dP, then dS
      store(dsm, p.dtype);
      dv.noalias() += pm * dout;
      const Eigen::Map<const RowVecF> delta(qh.delta + r0, rn);
      dsm = pm.array() * (dsm.array().rowwise() - delta.array());
      store(dsm, p.dtype);
      dk.noalias() += dsm * q;
    }
    dk *= scale;
    store(dk, p.dtype);  // this head's dK_h, dV_h
    store(dv, p.dtype);
    for (int64_t c = 0; c < cn; ++c)
      for (int64_t e = 0; e < d; ++e) {
        gk[(c0 + c) * d + e] += dk(c, e);
        gv[(c0 + c) * d + e] += dv(c, e);
      }
  });
}

}  // namespace

StandardStats standard_softmax_stats(const AttnProblem& p, const HostInputs& in, int threads) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k;
  const int d = p.head_dim;
  StandardStats st;
  st.m.assign(size_t(p.batch) * p.heads * nq, 0.f);
  st.l.assign(st.m.size(), 0.f);
  st.delta.assign(st.m.size(), 0.f);
  const int group = p.heads / p.heads_kv;
  for (int b = 0; b < p.batch; ++b)
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      const KvHead kv{b, hk, head_view(in.k, nk, p.heads_kv, d, b, hk), head_view(in.v, nk, p.heads_kv, d, b, hk)};
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        const size_t at = (size_t(b) * p.heads + h) * nq;
        stats_pass(p, kv, head_view(in.q, nq, p.heads, d, b, h), head_view(in.dout, nq, p.heads, d, b, h),
                   st.m.data() + at, st.l.data() + at, st.delta.data() + at, threads);
      }
    }
  return st;
}

SampledGrads standard_backward_in_precision(const AttnProblem& p, const HostInputs& in,
                                            const std::vector<int64_t>& rows,
                                            const std::vector<int64_t>& cols, int threads,
                                            const StandardStats* stats) {
  const size_t q_elems = size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
  const size_t kv_elems = size_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
  if (in.q.size() != q_elems || in.dout.size() != q_elems || in.k.size() != kv_elems || in.v.size() != kv_elems)
    throw KernelError(fmt::format("standard_backward_in_precision: sizes q={} dout={} k={} v={} do not match {}",
                                  in.q.size(), in.dout.size(), in.k.size(), in.v.size(), p.describe()));
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k;
  const int d = p.head_dim;
  StandardStats own;
  if (!stats) own = standard_softmax_stats(p, in, threads);
  const StandardStats& st = stats ? *stats : own;
  if (st.m.size() != size_t(p.batch) * p.heads * nq || st.l.size() != st.m.size() ||
      st.delta.size() != st.m.size())
    throw KernelError(fmt::format("standard_backward_in_precision: statistics of {} rows given for {}",
                                  st.m.size(), p.describe()));
  const Problem pr{p, rows, cols, threads};
  SampledGrads g;
  g.rows = rows;
  g.cols = cols;
  g.dq.assign(size_t(p.batch) * rows.size() * p.heads * d, 0.0);
  g.dk.assign(size_t(p.batch) * cols.size() * p.heads_kv * d, 0.0);
  g.dv.assign(g.dk.size(), 0.0);

  const int group = p.heads / p.heads_kv;
  for (int b = 0; b < p.batch; ++b) {
    for (int hk = 0; hk < p.heads_kv; ++hk) {
      const KvHead kv{b, hk, head_view(in.k, nk, p.heads_kv, d, b, hk),
                      head_view(in.v, nk, p.heads_kv, d, b, hk)};
      std::vector<float> gk(cols.size() * d, 0.f), gv(cols.size() * d, 0.f);
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        const size_t at = (size_t(b) * p.heads + h) * nq;
        const QueryHead qh{b,
                           h,
                           head_view(in.q, nq, p.heads, d, b, h),
                           head_view(in.dout, nq, p.heads, d, b, h),
                           st.m.data() + at,
                           st.l.data() + at,
                           st.delta.data() + at};
        rows_pass(pr, kv, qh, g);
        cols_pass(pr, kv, qh, gk, gv);
      }
      store(gk, p.dtype);  // the group's sums
      store(gv, p.dtype);
      for (size_t c = 0; c < cols.size(); ++c)
        for (int e = 0; e < d; ++e) {
          const size_t at = ((size_t(b) * cols.size() + c) * p.heads_kv + hk) * d + e;
          g.dk[at] = gk[c * d + e];
          g.dv[at] = gv[c * d + e];
        }
    }
  }
  return g;
}

}  // namespace fa
