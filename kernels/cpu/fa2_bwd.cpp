// FlashAttention-2's backward (Dao 2023, Algorithm 2) on the CPU:
//   pre-pass    D_i = rowsum(dO_i * O_i); the float32 dQ accumulator zeroed
//   main        per (batch, KV head, K/V block j), in parallel: load K_j, V_j once;
//               for each query head of the GQA group and each Q block i that sees block j:
//                 S = scale Q_i K_j^T,  P = exp(S - LSE_i)   (from the saved LSE; masked
//                                                            only in blocks on the diagonal)
//                 dV_j += P^T dO_i,  dP = dO_i V_j^T,  dS = P * (dP - D_i)
//                 dK_j += dS^T Q_i,  accumulator_i += dS K_j
//               then write dK_j = scale * dK_j and dV_j once (the group's sum)
//   conversion  dQ = scale * accumulator
// Q block i receives one dQ share per K/V block that it sees. A GPU adds them
// with float32 atomics in whatever order blocks finish; here a ticket per
// (batch, head, Q block) admits block j's share only after block j-1's, so dQ
// sums in K/V block order and the result has the same bits for any thread count.
#include "cpu/fa2_bwd.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "core/errors.h"
#include "cpu/cpu_common.h"
#include "core/parallel.h"

namespace fa {
namespace {

constexpr int64_t kAccumBytes = 4;  // the dQ accumulator is float32

struct BwdView : cpu::View {
  const float* dout_row(int b, int h, int64_t r) const {
    return static_cast<const float*>(p.dout) + b * p.do_batch_stride + r * p.do_row_stride +
           h * p.do_head_stride;
  }
  float* dq_row(int b, int h, int64_t r) const {
    return static_cast<float*>(p.dq) + b * p.dq_batch_stride + r * p.dq_row_stride + h * p.dq_head_stride;
  }
  float* dk_row(int b, int hk, int64_t j) const {
    return static_cast<float*>(p.dk) + b * p.dk_batch_stride + j * p.dk_row_stride + hk * p.dk_head_stride;
  }
  float* dv_row(int b, int hk, int64_t j) const {
    return static_cast<float*>(p.dv) + b * p.dv_batch_stride + j * p.dv_row_stride + hk * p.dv_head_stride;
  }
};

int64_t workspace_bytes(int64_t batch, int64_t heads, int64_t seqlen_q, int64_t head_dim) {
  return batch * heads * seqlen_q * (cpu::kStatBytes + kAccumBytes * head_dim);  // D, accumulator
}

// The loop body is a template on the planted fault so that Fault == none
// compiles to exactly the kernel without any fault code.
template <CpuBwdFault Fault>
void fa2_backward(const AttnParams& p, const Tile& tile, RunContext& ctx) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, heads = p.heads, group = p.kv_group();
  const int d = p.head_dim;
  const int64_t bm = tile.block_m, bn = tile.block_n;
  if (bm <= 0 || bn <= 0)
    throw KernelError(fmt::format("cpu.fa2 backward: tile {}x{} is empty", bm, bn));
  cpu::check_params(p, "cpu.fa2 backward", workspace_bytes(p.batch, heads, nq, d));
  if (!p.dout || !p.dq || !p.dk || !p.dv)
    throw KernelError("cpu.fa2 backward: null dO/dQ/dK/dV pointer");
  const BwdView t{{p}};
  const int64_t s = cpu::elem_bytes(ctx);
  const int64_t tr = cpu::ceil_div(nq, bm), tc = cpu::ceil_div(nk, bn);
  const float scale = p.softmax_scale;
  float* const delta = static_cast<float*>(p.workspace);       // [batch, heads, seqlen_q]
  float* const accum = delta + int64_t(p.batch) * heads * nq;  // [batch, heads, seqlen_q, d]
  auto row_at = [&](int b, int64_t h, int64_t r) { return (int64_t(b) * heads + h) * nq + r; };
  cpu::ByteCount count;

  parallel_for(int64_t(p.batch) * heads * tr, ctx.threads, [&](int64_t task, int) {
    const int64_t bh = task / tr, r0 = task % tr * bm, rows = std::min(bm, nq - r0);
    const int b = int(bh / heads), h = int(bh % heads);
    for (int64_t r = r0; r < r0 + rows; ++r) {
      delta[row_at(b, h, r)] = cpu::dot(t.o_row(b, h, r), t.dout_row(b, h, r), d);
      std::fill_n(accum + row_at(b, h, r) * d, d, 0.f);
    }
    count.add(2 * rows * d * s, rows * (cpu::kStatBytes + kAccumBytes * d));
  });

  // next_share[(b * heads + h) * tr + i]: the K/V block whose dQ share Q block i
  // takes next. Block j is seen by Q blocks i_first(j) .. tr-1 (later rows see
  // more keys), so block i takes shares 0, 1, ... in turn, without gaps.
  std::vector<std::atomic<int64_t>> next_share(size_t(p.batch) * heads * tr);
  std::atomic<bool> abandoned{false};  // a task threw: nobody waits for its shares
  parallel_for(int64_t(p.batch) * p.heads_kv * tc, ctx.threads, [&](int64_t task, int) {
    try {
      const int64_t bk = task / tc, j = task % tc;
      const int b = int(bk / p.heads_kv), hk = int(bk % p.heads_kv);
      const int64_t c0 = j * bn, cols = std::min(bn, nk - c0);
      auto q_block_rows = [&](int64_t i) { return std::min(bm, nq - i * bm); };
      int64_t i_first = 0;
      while (i_first < tr && t.visible_blocks(i_first * bm, q_block_rows(i_first), bn) <= j) ++i_first;
      std::vector<float> kj(cols * d), vj(cols * d), dkj(cols * d, 0.f), dvj(cols * d, 0.f);
      std::vector<float> qi(bm * d), doi(bm * d), dqi(bm * d), pij(bm * cols), dsij(bm * cols);
      int64_t rd = 0, wr = 0;
      if (i_first < tr) {
        for (int64_t c = 0; c < cols; ++c) {
          std::copy_n(t.k_row(b, hk * int(group), c0 + c), d, &kj[c * d]);
          std::copy_n(t.v_row(b, hk * int(group), c0 + c), d, &vj[c * d]);
        }
        rd += 2 * cols * d * s;
      }
      for (int g = 0; g < group; ++g) {
        const int h = hk * int(group) + g;
        for (int64_t i = i_first; i < tr; ++i) {
          const int64_t r0 = i * bm, rows = q_block_rows(i);
          for (int64_t r = 0; r < rows; ++r) {
            std::copy_n(t.q_row(b, h, r0 + r), d, &qi[r * d]);
            std::copy_n(t.dout_row(b, h, r0 + r), d, &doi[r * d]);
          }
          rd += 2 * rows * d * s + 2 * rows * cpu::kStatBytes;  // Q_i, dO_i, LSE_i, D_i
          // Only a block whose last key is beyond the first row's last key needs a mask.
          const bool masked = p.causal && c0 + cols - 1 > t.last_key(r0);

          for (int64_t r = 0; r < rows; ++r) {
            const float lse = t.lse(b, h, r0 + r), d_r = delta[row_at(b, h, r0 + r)];
            int64_t last = masked ? t.last_key(r0 + r) : nk;
            if constexpr (Fault == CpuBwdFault::causal_unmasked_recompute) last = nk;
            for (int64_t c = 0; c < cols; ++c) {
              // A row that sees no key has LSE = -inf and P = 0.
              const bool seen = c0 + c <= last && lse != cpu::kNegInf;
              const float pv = seen ? std::exp(scale * cpu::dot(&qi[r * d], &kj[c * d], d) - lse) : 0.f;
              const float dp = cpu::dot(&doi[r * d], &vj[c * d], d);
              pij[r * cols + c] = pv;
              dsij[r * cols + c] = Fault == CpuBwdFault::no_d_term ? pv * dp : pv * (dp - d_r);
            }
          }
          if (Fault != CpuBwdFault::gqa_not_summed || g == 0) {
            for (int64_t c = 0; c < cols; ++c)
              for (int64_t r = 0; r < rows; ++r) {
                const float pv = pij[r * cols + c], ds = dsij[r * cols + c];
                for (int e = 0; e < d; ++e) {
                  dvj[c * d + e] += pv * doi[r * d + e];
                  dkj[c * d + e] += ds * qi[r * d + e];
                }
              }
          }
          std::fill(dqi.begin(), dqi.end(), 0.f);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              const float ds = dsij[r * cols + c];
              for (int e = 0; e < d; ++e) dqi[r * d + e] += ds * kj[c * d + e];
            }

          std::atomic<int64_t>& ticket = next_share[size_t((int64_t(b) * heads + h) * tr + i)];
          while (ticket.load(std::memory_order_acquire) != j) {
            if (abandoned.load(std::memory_order_relaxed)) return;
            std::this_thread::yield();
          }
          float* acc = accum + row_at(b, h, r0) * d;
          for (int64_t x = 0; x < rows * d; ++x) {
            if constexpr (Fault == CpuBwdFault::dq_overwritten) acc[x] = dqi[x];
            else acc[x] += dqi[x];
          }
          ticket.store(j + 1, std::memory_order_release);
          rd += kAccumBytes * rows * d;
          wr += kAccumBytes * rows * d;
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        float* dk = t.dk_row(b, hk, c0 + c);
        float* dv = t.dv_row(b, hk, c0 + c);
        for (int e = 0; e < d; ++e) {
          dk[e] = scale * dkj[c * d + e];
          dv[e] = dvj[c * d + e];
        }
      }
      wr += 2 * cols * d * s;
      count.add(rd, wr);
    } catch (...) {
      abandoned.store(true);
      throw;
    }
  });

  parallel_for(int64_t(p.batch) * heads * tr, ctx.threads, [&](int64_t task, int) {
    const int64_t bh = task / tr, r0 = task % tr * bm, rows = std::min(bm, nq - r0);
    const int b = int(bh / heads), h = int(bh % heads);
    const float dq_scale = Fault == CpuBwdFault::dq_unscaled ? 1.f : scale;
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const float* acc = accum + row_at(b, h, r) * d;
      float* dq = t.dq_row(b, h, r);
      for (int e = 0; e < d; ++e) dq[e] = dq_scale * acc[e];
    }
    count.add(kAccumBytes * rows * d, rows * d * s);
  });
  count.report(ctx);
}

}  // namespace

int64_t cpu_fa2_bwd_workspace_bytes(const AttnProblem& p) {
  return workspace_bytes(p.batch, p.heads, p.seqlen_q, p.head_dim);
}

void cpu_fa2_backward(const AttnParams& p, const Tile& tile, RunContext& ctx) {
  fa2_backward<CpuBwdFault::none>(p, tile, ctx);
}

void cpu_fa2_backward(const AttnParams& p, const Tile& tile, RunContext& ctx, CpuBwdFault fault) {
  switch (fault) {
    case CpuBwdFault::none: return fa2_backward<CpuBwdFault::none>(p, tile, ctx);
    case CpuBwdFault::no_d_term: return fa2_backward<CpuBwdFault::no_d_term>(p, tile, ctx);
    case CpuBwdFault::gqa_not_summed: return fa2_backward<CpuBwdFault::gqa_not_summed>(p, tile, ctx);
    case CpuBwdFault::causal_unmasked_recompute:
      return fa2_backward<CpuBwdFault::causal_unmasked_recompute>(p, tile, ctx);
    case CpuBwdFault::dq_unscaled: return fa2_backward<CpuBwdFault::dq_unscaled>(p, tile, ctx);
    case CpuBwdFault::dq_overwritten: return fa2_backward<CpuBwdFault::dq_overwritten>(p, tile, ctx);
  }
}

std::string_view to_string(CpuBwdFault f) {
  switch (f) {
    case CpuBwdFault::none: return "none";
    case CpuBwdFault::no_d_term: return "no_d_term";
    case CpuBwdFault::gqa_not_summed: return "gqa_not_summed";
    case CpuBwdFault::causal_unmasked_recompute: return "causal_unmasked_recompute";
    case CpuBwdFault::dq_unscaled: return "dq_unscaled";
    case CpuBwdFault::dq_overwritten: return "dq_overwritten";
  }
  return "?";
}

const std::vector<CpuBwdFault>& planted_cpu_bwd_faults() {
  static const std::vector<CpuBwdFault> faults = {
      CpuBwdFault::no_d_term, CpuBwdFault::gqa_not_summed, CpuBwdFault::causal_unmasked_recompute,
      CpuBwdFault::dq_unscaled, CpuBwdFault::dq_overwritten};
  return faults;
}

}  // namespace fa
