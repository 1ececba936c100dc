// Standard attention on the CPU: S = scale * Q K^T materialised in the
// workspace, P = softmax(S) materialised next to it, O = P V. S and P for every
// (batch, head) live at once, which is the N^2 memory the flash kernels avoid.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "core/types.h"
#include "cpu/cpu_common.h"
#include "cpu/cpu_kernels.h"

namespace fa {

int64_t cpu_standard_workspace_bytes(const AttnProblem& p) {
  return 2 * int64_t(p.batch) * p.heads * p.seqlen_q * p.seqlen_k * int64_t(sizeof(float));
}

void cpu_standard_forward(const AttnParams& p, const Tile&, RunContext& ctx) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, bh_count = int64_t(p.batch) * p.heads;
  cpu::check_params(p, "cpu.standard", 2 * bh_count * nq * nk * int64_t(sizeof(float)));
  const cpu::View t{p};
  const int d = p.head_dim;
  const int64_t s = cpu::elem_bytes(ctx);
  float* s_all = static_cast<float*>(p.workspace);
  float* p_all = s_all + bh_count * nq * nk;
  constexpr int64_t kRows = 64;  // rows per task: parallelism inside one (batch, head)
  const int64_t chunks = cpu::ceil_div(nq, kRows);
  cpu::ByteCount count;

  parallel_for(bh_count * chunks, ctx.threads, [&](int64_t task, int) {
    const int64_t bh = task / chunks, r0 = (task % chunks) * kRows;
    const int b = int(bh / p.heads), h = int(bh % p.heads);
    const int64_t rows = std::min(kRows, nq - r0);
    float* S = s_all + bh * nq * nk;
    float* P = p_all + bh * nq * nk;
    int64_t rd = 0, wr = 0;
    // The two matmuls are counted as ideal GEMMs that read K and V once per
    // (batch, head): charged to the first row chunk.
    if (r0 == 0) rd += 2 * nk * d * s;

    // S = scale * Q K^T, masked entries -inf (the whole N_q x N_k is written).
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const float* q = t.q_row(b, h, r);
      const int64_t last = t.last_key(r);
      for (int64_t j = 0; j < nk; ++j)
        S[r * nk + j] = j <= last ? p.softmax_scale * cpu::dot(q, t.k_row(b, h, j), d) : cpu::kNegInf;
    }
    rd += rows * d * s;   // Q
    wr += rows * nk * s;  // S

    // P = softmax(S) row by row; LSE beside it.
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const float* srow = S + r * nk;
      float* prow = P + r * nk;
      float m = cpu::kNegInf;
      for (int64_t j = 0; j < nk; ++j) m = std::max(m, srow[j]);
      if (m == cpu::kNegInf) {  // the row sees no key
        std::fill(prow, prow + nk, 0.f);
        t.lse(b, h, r) = cpu::kNegInf;
        continue;
      }
      float l = 0.f;
      for (int64_t j = 0; j < nk; ++j) l += (prow[j] = std::exp(srow[j] - m));
      const float inv = 1.f / l;
      for (int64_t j = 0; j < nk; ++j) prow[j] *= inv;
      t.lse(b, h, r) = m + std::log(l);
    }
    rd += rows * nk * s;                   // S
    wr += rows * nk * s + rows * cpu::kStatBytes;  // P, LSE

    // O = P V.
    std::vector<float> acc(d);
    for (int64_t r = r0; r < r0 + rows; ++r) {
      std::fill(acc.begin(), acc.end(), 0.f);
      const float* prow = P + r * nk;
      for (int64_t j = 0; j < nk; ++j) {
        const float pj = prow[j];
        const float* v = t.v_row(b, h, j);
        for (int e = 0; e < d; ++e) acc[e] += pj * v[e];
      }
      std::copy(acc.begin(), acc.end(), t.o_row(b, h, r));
    }
    rd += rows * nk * s;  // P
    wr += rows * d * s;   // O
    count.add(rd, wr);
  });
  count.report(ctx);
}

}  // namespace fa
