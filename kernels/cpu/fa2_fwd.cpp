// FlashAttention-2 on the CPU: for each (batch, head) and Q block i, load Q_i
// once, stream the visible K/V blocks keeping O unnormalised with running m and
// l in tile buffers, divide by l once, write O_i and LSE_i once. Causal: blocks
// fully above the diagonal are skipped; only blocks crossing it are masked.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/types.h"
#include "cpu/cpu_common.h"
#include "cpu/cpu_kernels.h"

namespace fa {

namespace {

// The loop body is a template on the planted fault so that Fault == none
// compiles to exactly the kernel without any fault code (no runtime branch in
// the inner loops, the same vectorisation).
template <CpuFault Fault>
void fa2_forward(const AttnParams& p, const Tile& tile, RunContext& ctx) {
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
      const int64_t c0 = j * bn, loaded = std::min(bn, nk - c0);
      for (int64_t c = 0; c < loaded; ++c) {
        std::copy_n(t.k_row(b, h, c0 + c), d, &kj[c * d]);
        std::copy_n(t.v_row(b, h, c0 + c), d, &vj[c * d]);
      }
      rd += 2 * loaded * d * s;
      // Fault: the tile's stale rows beyond the ragged tail take part.
      const int64_t cols = Fault == CpuFault::ragged_tail_unmasked ? bn : loaded;
      // Only a block whose last key is beyond the first row's last key needs a mask.
      const bool masked = p.causal && c0 + cols - 1 > t.last_key(r0);

      for (int64_t r = 0; r < rows; ++r) {
        int64_t last = masked ? t.last_key(r0 + r) : nk;
        if constexpr (Fault == CpuFault::causal_off_by_one)
          if (masked) last = std::min<int64_t>(last + 1, nk - 1);
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
        if constexpr (Fault != CpuFault::no_rescale)
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

    // Fault: the classic `rows - 1` bound, only in the last Q block.
    const int64_t written = Fault == CpuFault::row_not_written && i == tr - 1 ? rows - 1 : rows;
    for (int64_t r = 0; r < written; ++r) {
      float* out = t.o_row(b, h, r0 + r);
      if (li[r] > 0.f) {
        const float inv = 1.f / li[r];
        for (int e = 0; e < d; ++e) out[e] = oi[r * d + e] * inv;
        float lse = mi[r] + std::log(li[r]);
        if constexpr (Fault == CpuFault::lse_unscaled) lse /= p.softmax_scale;
        t.lse(b, h, r0 + r) = lse;
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

}  // namespace

void cpu_fa2_forward(const AttnParams& p, const Tile& tile, RunContext& ctx) {
  fa2_forward<CpuFault::none>(p, tile, ctx);
}

void cpu_fa2_forward(const AttnParams& p, const Tile& tile, RunContext& ctx, CpuFault fault) {
  switch (fault) {
    case CpuFault::none: return fa2_forward<CpuFault::none>(p, tile, ctx);
    case CpuFault::no_rescale: return fa2_forward<CpuFault::no_rescale>(p, tile, ctx);
    case CpuFault::causal_off_by_one: return fa2_forward<CpuFault::causal_off_by_one>(p, tile, ctx);
    case CpuFault::ragged_tail_unmasked:
      return fa2_forward<CpuFault::ragged_tail_unmasked>(p, tile, ctx);
    case CpuFault::lse_unscaled: return fa2_forward<CpuFault::lse_unscaled>(p, tile, ctx);
    case CpuFault::row_not_written: return fa2_forward<CpuFault::row_not_written>(p, tile, ctx);
  }
}

std::string_view to_string(CpuFault f) {
  switch (f) {
    case CpuFault::none: return "none";
    case CpuFault::no_rescale: return "no_rescale";
    case CpuFault::causal_off_by_one: return "causal_off_by_one";
    case CpuFault::ragged_tail_unmasked: return "ragged_tail_unmasked";
    case CpuFault::lse_unscaled: return "lse_unscaled";
    case CpuFault::row_not_written: return "row_not_written";
  }
  return "?";
}

const std::vector<CpuFault>& planted_cpu_faults() {
  static const std::vector<CpuFault> faults = {CpuFault::no_rescale, CpuFault::causal_off_by_one,
                                               CpuFault::ragged_tail_unmasked, CpuFault::lse_unscaled,
                                               CpuFault::row_not_written};
  return faults;
}

}  // namespace fa
