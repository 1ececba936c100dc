// FlashAttention-1 on the CPU, in the loop order of the paper's Algorithm 1:
// outer loop over K/V blocks j, inner loop over Q blocks i, with O, l and m
// read from and written back to the full buffers at every (i, j) step. The
// running O lives in the (float32) output buffer; m and l in the workspace.
// The GPU FA1 keeps its running O in a float32 workspace for the same reason:
// it is re-read and rescaled Tc times, so it is counted at 4 bytes.
// Like the GPU kernel, each head's Q blocks are dealt to fa1_splits(...) splits
// (common/fa1_split.h), each running the loop above over its own blocks, so the
// counted bytes are the model's exactly.
#include <cmath>
#include <vector>

#include "common/fa1_split.h"
#include "core/parallel.h"
#include "core/types.h"
#include "cpu/cpu_common.h"
#include "cpu/cpu_kernels.h"

namespace fa {

int64_t cpu_fa1_workspace_bytes(const AttnProblem& p) {
  return 2 * int64_t(p.batch) * p.heads * p.seqlen_q * int64_t(sizeof(float));
}

void cpu_fa1_forward(const AttnParams& p, const Tile& tile, RunContext& ctx) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, bh_count = int64_t(p.batch) * p.heads;
  cpu::check_params(p, "cpu.fa1", 2 * bh_count * nq * int64_t(sizeof(float)));
  const cpu::View t{p};
  const int d = p.head_dim;
  const int64_t s = cpu::elem_bytes(ctx), o_bytes = 4;
  const int64_t bm = tile.block_m, bn = tile.block_n;
  const int64_t tr = cpu::ceil_div(nq, bm), tc = cpu::ceil_div(nk, bn);
  float* stats = static_cast<float*>(p.workspace);
  const int64_t splits = fa1_splits(bh_count, tr, tile.warps);
  cpu::ByteCount count;

  parallel_for(bh_count * splits, ctx.threads, [&](int64_t item, int) {
    const int64_t bh = item / splits, split = item % splits;
    const int b = int(bh / p.heads), h = int(bh % p.heads);
    float* m_full = stats + bh * 2 * nq;
    float* l_full = m_full + nq;
    int64_t rd = 0, wr = 0;
    std::vector<float> kj(bn * d), vj(bn * d), qi(bm * d), oi(bm * d), li(bm), mi(bm), sij(bn);
    // Every row of this split's Q blocks (as for_own_rows in the GPU kernel).
    auto for_own_rows = [&](auto&& f) {
      for (int64_t i = split; i < tr; i += splits)
        for (int64_t r = i * bm; r < std::min(nq, (i + 1) * bm); ++r) f(r);
    };

    // Line 2: O = 0, l = 0, m = -inf in HBM (this split's rows).
    for_own_rows([&](int64_t r) {
      std::fill(t.o_row(b, h, r), t.o_row(b, h, r) + d, 0.f);
      m_full[r] = cpu::kNegInf;
      l_full[r] = 0.f;
      wr += d * o_bytes + 2 * cpu::kStatBytes;
    });

    // Block pair (i, j) is visited iff j < visible_blocks(i); this split's last
    // Q block sees the most, so it bounds the K/V blocks worth loading.
    std::vector<int64_t> vis(tr, 0);
    int64_t kv_blocks = 0;
    for (int64_t i = split; i < tr; i += splits) {
      vis[i] = t.visible_blocks(i * bm, std::min(bm, nq - i * bm), bn);
      kv_blocks = std::max(kv_blocks, vis[i]);
    }

    for (int64_t j = 0; j < std::min(tc, kv_blocks); ++j) {  // outer: K/V blocks
      const int64_t c0 = j * bn, cols = std::min(bn, nk - c0);
      for (int64_t c = 0; c < cols; ++c) {
        std::copy_n(t.k_row(b, h, c0 + c), d, &kj[c * d]);
        std::copy_n(t.v_row(b, h, c0 + c), d, &vj[c * d]);
      }
      rd += 2 * cols * d * s;

      for (int64_t i = split; i < tr; i += splits) {  // inner: this split's Q blocks
        if (j >= vis[i]) continue;                     // fully above the causal diagonal
        const int64_t r0 = i * bm, rows = std::min(bm, nq - r0);
        for (int64_t r = 0; r < rows; ++r) {
          std::copy_n(t.q_row(b, h, r0 + r), d, &qi[r * d]);
          std::copy_n(t.o_row(b, h, r0 + r), d, &oi[r * d]);
          mi[r] = m_full[r0 + r];
          li[r] = l_full[r0 + r];
        }
        rd += rows * (d * s + d * o_bytes + 2 * cpu::kStatBytes);

        for (int64_t r = 0; r < rows; ++r) {
          // S_ij row, its max m~ and P~ = exp(S - m~), l~ = rowsum(P~).
          const int64_t last = t.last_key(r0 + r);
          float m_blk = cpu::kNegInf;
          for (int64_t c = 0; c < cols; ++c) {
            sij[c] = c0 + c <= last ? p.softmax_scale * cpu::dot(&qi[r * d], &kj[c * d], d)
                                    : cpu::kNegInf;
            m_blk = std::max(m_blk, sij[c]);
          }
          if (m_blk == cpu::kNegInf) continue;  // this row sees no key of block j
          float l_blk = 0.f;
          for (int64_t c = 0; c < cols; ++c) l_blk += (sij[c] = std::exp(sij[c] - m_blk));
          // m_new = max(m_i, m~); l_new = e^(m_i-m_new) l_i + e^(m~-m_new) l~;
          // O_i = (l_i e^(m_i-m_new) O_i + e^(m~-m_new) P~ V_j) / l_new.
          const float m_new = std::max(mi[r], m_blk);
          const float a_old = std::exp(mi[r] - m_new) * li[r], a_blk = std::exp(m_blk - m_new);
          const float l_new = a_old + a_blk * l_blk;
          float* o = &oi[r * d];
          for (int e = 0; e < d; ++e) o[e] *= a_old;
          for (int64_t c = 0; c < cols; ++c) {
            const float pc = a_blk * sij[c];
            const float* v = &vj[c * d];
            for (int e = 0; e < d; ++e) o[e] += pc * v[e];
          }
          const float inv = 1.f / l_new;
          for (int e = 0; e < d; ++e) o[e] *= inv;
          mi[r] = m_new;
          li[r] = l_new;
        }

        // Block i's last visit writes the output, O_i and LSE_i = m + log(l), as the
        // GPU kernel does (in the dtype there: counted at s bytes); a row of the block
        // that saw no key keeps l = 0 -> -inf, O = 0.
        const bool last = j == vis[i] - 1;
        for (int64_t r = 0; r < rows; ++r) {
          std::copy_n(&oi[r * d], d, t.o_row(b, h, r0 + r));
          m_full[r0 + r] = mi[r];
          l_full[r0 + r] = li[r];
          if (last) t.lse(b, h, r0 + r) = li[r] > 0.f ? mi[r] + std::log(li[r]) : cpu::kNegInf;
        }
        wr += rows * (last ? d * s + cpu::kStatBytes : d * o_bytes + 2 * cpu::kStatBytes);
      }
    }

    // Q blocks that see no key (causal, seqlen_q > seqlen_k) are never visited: O = 0
    // (from line 2), LSE = -inf, written as the output.
    for (int64_t i = split; i < tr; i += splits) {
      if (vis[i] > 0) continue;
      for (int64_t r = i * bm; r < std::min(nq, (i + 1) * bm); ++r) {
        std::fill(t.o_row(b, h, r), t.o_row(b, h, r) + d, 0.f);
        t.lse(b, h, r) = cpu::kNegInf;
        wr += d * s + cpu::kStatBytes;
      }
    }
    count.add(rd, wr);
  });
  count.report(ctx);
}

}  // namespace fa
