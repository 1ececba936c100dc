// FlashAttention-2 on the CPU: for each (batch, head) and Q block i, load Q_i
// once, stream the visible K/V blocks keeping O unnormalised with running m and
// l in tile buffers, divide by l once, write O_i and LSE_i once. Causal: blocks
// fully above the diagonal are skipped; only blocks crossing it are masked.
#include <cmath>
#include <vector>

#include "core/types.h"
#include "reference/cpu_common.h"
#include "reference/cpu_kernels.h"
#include "reference/parallel.h"

namespace fa {

void cpu_fa2_forward(const AttnParams& p, const Tile& tile, RunContext& ctx) {
  cpu::check_params(p, "cpu.fa2", 0);
  const cpu::View t{p};
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, bh_count = int64_t(p.batch) * p.heads;
  const int d = p.head_dim;
  const int64_t s = cpu::elem_bytes(ctx);
  const int64_t bm = tile.block_m, bn = tile.block_n;
  const int64_t tr = cpu::ceil_div(nq, bm);
  cpu::ByteCount count;

  parallel_for(bh_count * tr, ctx.threads, [&](int64_t task, int) {
    const int64_t bh = task / tr, i = task % tr;
    const int b = int(bh / p.heads), h = int(bh % p.heads);
    const int64_t r0 = i * bm, rows = std::min(bm, nq - r0);
    std::vector<float> qi(rows * d), oi(rows * d, 0.f), mi(rows, cpu::kNegInf), li(rows, 0.f);
    std::vector<float> kj(bn * d), vj(bn * d), sij(bn);
    int64_t rd = 0, wr = 0;

    for (int64_t r = 0; r < rows; ++r) std::copy_n(t.q_row(b, h, r0 + r), d, &qi[r * d]);
    rd += rows * d * s;

    const int64_t blocks = t.visible_blocks(r0, rows, bn);
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t c0 = j * bn, cols = std::min(bn, nk - c0);
      for (int64_t c = 0; c < cols; ++c) {
        std::copy_n(t.k_row(b, h, c0 + c), d, &kj[c * d]);
        std::copy_n(t.v_row(b, h, c0 + c), d, &vj[c * d]);
      }
      rd += 2 * cols * d * s;
      // Only a block whose last key is beyond the first row's last key needs a mask.
      const bool masked = p.causal && c0 + cols - 1 > t.last_key(r0);

      for (int64_t r = 0; r < rows; ++r) {
        const int64_t last = masked ? t.last_key(r0 + r) : nk;
        float m_blk = cpu::kNegInf;
        for (int64_t c = 0; c < cols; ++c) {
          sij[c] = c0 + c <= last ? p.softmax_scale * cpu::dot(&qi[r * d], &kj[c * d], d)
                                  : cpu::kNegInf;
          m_blk = std::max(m_blk, sij[c]);
        }
        const float m_new = std::max(mi[r], m_blk);
        if (m_new == cpu::kNegInf) continue;  // nothing seen yet
        // Rescale the unnormalised O and l by e^(m_old - m_new), add P V.
        const float alpha = std::exp(mi[r] - m_new);
        float* o = &oi[r * d];
        for (int e = 0; e < d; ++e) o[e] *= alpha;
        float l_blk = 0.f;
        for (int64_t c = 0; c < cols; ++c) {
          const float pc = std::exp(sij[c] - m_new);
          l_blk += pc;
          const float* v = &vj[c * d];
          for (int e = 0; e < d; ++e) o[e] += pc * v[e];
        }
        li[r] = alpha * li[r] + l_blk;
        mi[r] = m_new;
      }
    }

    for (int64_t r = 0; r < rows; ++r) {
      float* out = t.o_row(b, h, r0 + r);
      if (li[r] > 0.f) {
        const float inv = 1.f / li[r];
        for (int e = 0; e < d; ++e) out[e] = oi[r * d + e] * inv;
        t.lse(b, h, r0 + r) = mi[r] + std::log(li[r]);
      } else {  // the row sees no key
        std::fill(out, out + d, 0.f);
        t.lse(b, h, r0 + r) = cpu::kNegInf;
      }
    }
    wr += rows * d * s + rows * cpu::kStatBytes;
    count.add(rd, wr);
  });
  count.report(ctx);
}

}  // namespace fa
