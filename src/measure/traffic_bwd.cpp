// The backward passes' traffic. The flash families loop K/V blocks outer with
// the Q blocks that see them inner and accumulate dQ in a float32 buffer, then
// convert it; they differ in where D comes from. Standard attention moves its
// N^2 intermediates through HBM.
#include "measure/traffic_bwd.h"

#include <algorithm>

#include "measure/traffic_blocks.h"

namespace fa {
namespace {

using traffic::ceil_div;
using traffic::keys_in_blocks;
using traffic::kStatBytes;
using traffic::visible_kv_blocks;

constexpr int64_t kAccumBytes = 4;  // dQ (and standard's GQA dK, dV sums) accumulate in float32

// How a flash backward gets D = rowsum(dO * O) to its inner loop.
enum class DeltaFrom {
  pre_pass,    // FA2, FA3: a pre-pass reads O and dO once and writes D; each pair reads D_i
  inner_loop,  // FA1 (Algorithm 4): each pair reads O_i with dO_i and computes D_i there
};

// Per (batch, query head): the Q-side of every visited (Q block i, K/V block j)
// pair, D's share and the dQ accumulator's life. Returns it with the number of
// K/V blocks some Q block visits (a prefix: V_i grows with i).
Traffic flash_bwd_query_head(const AttnProblem& p, int64_t s, int64_t bm, int64_t bn, DeltaFrom delta,
                             int64_t& kv_blocks_visited) {
  const int64_t nq = p.seqlen_q, d = p.head_dim, tr = ceil_div(nq, bm);
  Traffic t;
  if (delta == DeltaFrom::pre_pass) {
    t.read_bytes += 2 * s * nq * d;  // O, dO
    t.write_bytes += kStatBytes * nq;  // D
  }
  t.write_bytes += kAccumBytes * nq * d;  // the dQ accumulator zeroed
  // Per pair: Q_i, dO_i and LSE_i, then D_i (pre-pass) or O_i (inner loop), and
  // the accumulator rows of block i read and written back.
  const int64_t pair_read = delta == DeltaFrom::pre_pass ? 2 * s * d + 2 * kStatBytes + kAccumBytes * d
                                                         : 3 * s * d + kStatBytes + kAccumBytes * d;
  kv_blocks_visited = 0;
  for (int64_t i = 0; i < tr; ++i) {
    const int64_t rows = std::min(bm, nq - i * bm);
    const int64_t pairs = visible_kv_blocks(p, i * bm, rows, bn);  // K/V blocks j < V_i
    kv_blocks_visited = std::max(kv_blocks_visited, pairs);
    t.read_bytes += pairs * rows * pair_read;
    t.write_bytes += pairs * rows * kAccumBytes * d;
  }
  // Conversion: read the accumulator, write dQ in the dtype.
  t.read_bytes += kAccumBytes * nq * d;
  t.write_bytes += s * nq * d;
  return t;
}

Traffic flash_bwd(const AttnProblem& p, int64_t s, const Tile& t, DeltaFrom delta) {
  const int64_t d = p.head_dim;
  int64_t kv_blocks = 0;
  const Traffic per_q_head = flash_bwd_query_head(p, s, t.block_m, t.block_n, delta, kv_blocks);
  // Per (batch, KV head): K_j, V_j read once for the whole GQA group; dK_j, dV_j
  // (the group's sum) written once, for every block.
  const int64_t kv_read = 2 * s * keys_in_blocks(p, kv_blocks, t.block_n) * d;
  const int64_t kv_write = 2 * s * int64_t(p.seqlen_k) * d;
  const int64_t bh = int64_t(p.batch) * p.heads, bhk = int64_t(p.batch) * p.heads_kv;
  return Traffic{per_q_head.read_bytes * bh + kv_read * bhk, per_q_head.write_bytes * bh + kv_write * bhk};
}

// S = scale Q K^T and P = exp(S - LSE) (masked) over one N^2 buffer, dV = P^T dO,
// dP = dO V^T, dS = P (dP - D) over the other, dQ = scale dS K, dK = scale dS^T Q,
// GEMMs counted as ideal (each operand read once). Causal shrinks nothing.
Traffic standard_bwd(const AttnProblem& p, int64_t s) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim, g = p.heads / p.heads_kv;
  // Per (batch, query head). Reads: Q, K (S); LSE, S (P); P, dO (dV); V, dO (dP);
  // dO, O, P, dP (dS); dS, K (dQ); dS, Q (dK). Writes: S, P, dP, dS; dQ.
  const int64_t q_read = s * (6 * nq * d + 3 * nk * d) + kStatBytes * nq + 6 * s * nq * nk;
  const int64_t q_write = 4 * s * nq * nk + s * nq * d;
  // Per (batch, KV head): dK and dV. One query head per KV head: written once in
  // the dtype. A group of g: each GEMM writes a float32 sum (the first with beta
  // = 0, the others read it back), then a kernel reads the sums and writes the dtype.
  int64_t kv_read = 0, kv_write = 2 * s * nk * d;
  if (g > 1) {
    kv_read = 2 * (g - 1) * kAccumBytes * nk * d + 2 * kAccumBytes * nk * d;
    kv_write += 2 * g * kAccumBytes * nk * d;
  }
  const int64_t bh = int64_t(p.batch) * p.heads, bhk = int64_t(p.batch) * p.heads_kv;
  return Traffic{q_read * bh + kv_read * bhk, q_write * bh + kv_write * bhk};
}

}  // namespace

std::optional<Traffic> traffic_model_bwd(Family f, const AttnProblem& p, const Tile& tile) {
  const int64_t s = dtype_bytes(p.dtype);
  switch (f) {
    case Family::standard: return standard_bwd(p, s);
    case Family::fa1: return flash_bwd(p, s, traffic::model_tile(f, tile), DeltaFrom::inner_loop);
    case Family::fa2:
    case Family::fa3: return flash_bwd(p, s, traffic::model_tile(f, tile), DeltaFrom::pre_pass);
    case Family::cudnn: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace fa
