// The HBM traffic model: bytes each family's loop structure moves between full
// tensors and on-chip tiles, per (batch, head), summed. docs/MEASUREMENT.md
// states the formulas; the CPU kernels count the same moves as they make them
// and tests/test_traffic.cpp checks the two agree exactly.
#include "measure/traffic.h"

#include <algorithm>
#include <vector>

#include "common/fa1_split.h"
#include "fa3/fa3_causal_balance.h"
#include "fa3/fa3_fp8_defaults.h"
#include "fa3/fa3_fp8_split.h"
#include "measure/traffic_blocks.h"

namespace fa {
namespace {

using traffic::ceil_div;
using traffic::model_tile;
using traffic::keys_in_blocks;
using traffic::kStatBytes;
using traffic::visible_kv_blocks;

constexpr int64_t kFa1OBytes = 4;  // FA1 keeps its running O in float32

Traffic standard_per_head(const AttnProblem& p, int64_t s) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  Traffic t;
  // S = Q K^T (each operand read once); softmax reads S, writes P and LSE; O = P V.
  t.read_bytes = (nq * d + nk * d) * s + nq * nk * s + nq * nk * s + nk * d * s;
  t.write_bytes = nq * nk * s + nq * nk * s + nq * kStatBytes + nq * d * s;
  return t;
}

Traffic fa1_per_head(const AttnProblem& p, int64_t s, int64_t bm, int64_t bn, int warps) {
  const int64_t nq = p.seqlen_q, d = p.head_dim;
  const int64_t tr = ceil_div(nq, bm);
  const int64_t splits = fa1_splits(int64_t(p.batch) * p.heads, tr, warps);
  Traffic t;
  // Algorithm 1 line 2: O = 0, l = 0, m = -inf in HBM.
  t.write_bytes += nq * d * kFa1OBytes + 2 * nq * kStatBytes;
  // Block pair (i, j) is visited iff j < visible_kv_blocks(i); each split (Q blocks
  // i = split mod splits, common/fa1_split.h) loads block j of K/V iff one of its
  // blocks visits it.
  std::vector<int64_t> kv_blocks_loaded(splits, 0);
  for (int64_t i = 0; i < tr; ++i) {
    const int64_t rows = std::min(bm, nq - i * bm);
    const int64_t pairs = visible_kv_blocks(p, i * bm, rows, bn);
    kv_blocks_loaded[i % splits] = std::max(kv_blocks_loaded[i % splits], pairs);
    // Per pair: read Q_i, O_i, l_i, m_i; write O_i, l_i, m_i, except at the last
    // pair, which writes the output: O_i in the dtype and LSE_i. A block that sees
    // no key is never visited and writes O = 0, LSE = -inf.
    t.read_bytes += pairs * rows * (d * s + d * kFa1OBytes + 2 * kStatBytes);
    t.write_bytes += std::max<int64_t>(pairs - 1, 0) * rows * (d * kFa1OBytes + 2 * kStatBytes);
    t.write_bytes += rows * (d * s + kStatBytes);
  }
  for (const int64_t kv : kv_blocks_loaded) t.read_bytes += 2 * keys_in_blocks(p, kv, bn) * d * s;
  return t;
}

// s: bytes of a Q, K, V element; so: of an O element (they differ for e4m3).
// row_shift: Q block i holds rows [i * bm - row_shift, (i + 1) * bm - row_shift)
// that exist (the e4m3 fa3 kernel's causal walk; 0 elsewhere).
Traffic fa2_per_head(const AttnProblem& p, int64_t s, int64_t so, int64_t bm, int64_t bn, int64_t row_shift = 0) {
  const int64_t nq = p.seqlen_q, d = p.head_dim;
  const int64_t tr = ceil_div(nq, bm);
  Traffic t;
  for (int64_t i = 0; i < tr; ++i) {
    const int64_t first = std::max<int64_t>(i * bm - row_shift, 0);
    const int64_t rows = std::min((i + 1) * bm - row_shift, nq) - first;
    const int64_t keys = keys_in_blocks(p, visible_kv_blocks(p, first, rows, bn), bn);
    t.read_bytes += rows * d * s + 2 * keys * d * s;  // Q_i once, K_j and V_j per visible j
    t.write_bytes += rows * d * so + rows * kStatBytes;  // O_i and LSE_i once
  }
  return t;
}

}  // namespace

// fa3's e4m3 forward beyond fp8_vt_in_kernel's lengths first writes V^T (its
// FP8 P V needs keys contiguous; the pre-pass, or on hd128's three-warpgroup
// tile the kernel's producer warps once per launch): V read once, V^T written once, seqlen_k
// padded to the pre-pass's block of keys (kernels/fa3/fa3_fp8_defaults.h,
// fp8_vt_seqlen). The attention then reads V^T where the model says V, at the same
// bytes (the padding's few extra keys aside). Up to those lengths the kernel
// reads V and transposes it in shared memory: the model's bytes as they are.
namespace {
Traffic fp8_vt_prepass(const AttnProblem& p) {
  const int64_t kv_heads = int64_t(p.batch) * p.heads_kv, d = p.head_dim;
  const int64_t padded = fp8_vt_seqlen(p.seqlen_k);
  return Traffic{kv_heads * p.seqlen_k * d, kv_heads * padded * d};
}

// The split tail of fa3's e4m3 forward on the pre-pass path (fa3_fp8_split.h,
// fp8_split_plan; none without a known SM count): the list's last `tail` tiles
// (m_block fastest) each run as k pieces over 1/k of the K/V blocks, so K and V
// are read as before, but every piece reads the tile's Q rows and writes its
// partial O, m and l, and the warps that end a tile's rows read the other
// k - 1 pieces' partials back. The counts' few bytes aside.
Traffic fp8_split_tail(const AttnProblem& p, const Tile& t, const TrafficRun& run) {
  const bool block_scaled = run.fp8 && run.fp8->fp8_scaling == Fp8Scaling::block;
  const Fp8SplitPlan sp = fp8_split_plan(p.batch, p.heads, p.seqlen_q, p.seqlen_k, p.causal, block_scaled,
                                         run.sm_count, t.block_m, t.block_n);
  if (sp.k == 1) return {};
  const int64_t m_blocks = ceil_div(p.seqlen_q, t.block_m);
  const int64_t partial = fp8_split_piece_bytes(t.block_m, p.head_dim);
  Traffic extra;
  for (int idx = sp.split_from; idx < sp.split_from + sp.tail; ++idx) {
    const int64_t m_block = idx % m_blocks;
    const int64_t rows = std::min<int64_t>(t.block_m, p.seqlen_q - m_block * t.block_m);
    extra.read_bytes += (sp.k - 1) * (rows * p.head_dim + partial);
    extra.write_bytes += sp.k * partial;
  }
  return extra;
}
}  // namespace

Traffic traffic_model(Family f, const AttnProblem& p, const Tile& tile, std::optional<DType> o_dtype,
                      const TrafficRun& run) {
  const int64_t s = dtype_bytes(p.dtype), so = dtype_bytes(o_dtype.value_or(output_dtype(p.dtype)));
  const Tile t = model_tile(f, tile);
  Traffic per_head;
  switch (f) {
    case Family::standard: per_head = standard_per_head(p, s); break;
    case Family::fa1: per_head = fa1_per_head(p, s, t.block_m, t.block_n, t.warps); break;
    case Family::fa2:
    case Family::cudnn: per_head = fa2_per_head(p, s, so, t.block_m, t.block_n); break;
    case Family::fa3:
      // The e4m3 kernel's causal walk moves its tiles up (fa3_causal_balance.h).
      per_head = fa2_per_head(p, s, so, t.block_m, t.block_n,
                              p.dtype == DType::e4m3 ? fa3::causal_row_shift(p.causal, p.seqlen_q, t.block_m) : 0);
      break;
  }
  const int64_t bh = int64_t(p.batch) * p.heads;
  Traffic total{per_head.read_bytes * bh, per_head.write_bytes * bh};
  if (f == Family::fa3 && p.dtype == DType::e4m3 && !fp8_vt_in_kernel(p.head_dim, p.causal, p.seqlen_q)) {
    total += fp8_vt_prepass(p);
    total += fp8_split_tail(p, t, run);
  }
  return total;
}

}  // namespace fa
