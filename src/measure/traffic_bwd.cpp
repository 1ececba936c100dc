// The FA2 backward's traffic: a pre-pass for D, K/V blocks outer with the Q
// blocks that see them inner, dQ accumulated in a float32 buffer, then converted.
#include "measure/traffic_bwd.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "measure/traffic_blocks.h"

namespace fa {
namespace {

using traffic::ceil_div;
using traffic::keys_in_blocks;
using traffic::kStatBytes;
using traffic::visible_kv_blocks;

constexpr int64_t kAccumBytes = 4;  // dQ is accumulated in float32

// Per (batch, query head): the D pre-pass, the Q-side of every visited (Q block
// i, K/V block j) pair, and the dQ conversion. Returns it with the number of
// K/V blocks some Q block visits (a prefix: V_i grows with i).
Traffic fa2_bwd_query_head(const AttnProblem& p, int64_t s, int64_t bm, int64_t bn,
                           int64_t& kv_blocks_visited) {
  const int64_t nq = p.seqlen_q, d = p.head_dim, tr = ceil_div(nq, bm);
  Traffic t;
  // Pre-pass: read O, dO; write D; zero the dQ accumulator.
  t.read_bytes += 2 * s * nq * d;
  t.write_bytes += kStatBytes * nq + kAccumBytes * nq * d;
  kv_blocks_visited = 0;
  for (int64_t i = 0; i < tr; ++i) {
    const int64_t rows = std::min(bm, nq - i * bm);
    const int64_t pairs = visible_kv_blocks(p, i * bm, rows, bn);  // K/V blocks j < V_i
    kv_blocks_visited = std::max(kv_blocks_visited, pairs);
    // Per pair: read Q_i, dO_i, LSE_i, D_i and the dQ_i accumulator; write it back.
    t.read_bytes += pairs * rows * (2 * s * d + 2 * kStatBytes + kAccumBytes * d);
    t.write_bytes += pairs * rows * kAccumBytes * d;
  }
  // Conversion: read the accumulator, write dQ in the dtype.
  t.read_bytes += kAccumBytes * nq * d;
  t.write_bytes += s * nq * d;
  return t;
}

}  // namespace

Traffic traffic_model_bwd(Family f, const AttnProblem& p, const Tile& tile) {
  if (f != Family::fa2)
    throw std::invalid_argument(
        fmt::format("traffic_model_bwd: no backward traffic model for family {}", to_string(f)));
  const int64_t s = dtype_bytes(p.dtype), d = p.head_dim;
  const Tile t = traffic::model_tile(f, tile);
  int64_t kv_blocks = 0;
  const Traffic per_q_head = fa2_bwd_query_head(p, s, t.block_m, t.block_n, kv_blocks);
  // Per (batch, KV head): K_j, V_j read once for the whole GQA group; dK_j, dV_j
  // (the group's sum) written once, for every block.
  const int64_t kv_read = 2 * s * keys_in_blocks(p, kv_blocks, t.block_n) * d;
  const int64_t kv_write = 2 * s * int64_t(p.seqlen_k) * d;
  const int64_t bh = int64_t(p.batch) * p.heads, bhk = int64_t(p.batch) * p.heads_kv;
  return Traffic{per_q_head.read_bytes * bh + kv_read * bhk,
                 per_q_head.write_bytes * bh + kv_write * bhk};
}

}  // namespace fa
