// cudnn_check's backward suite: cuDNN's forward makes O and LSE, the backward
// runs on poisoned dQ/dK/dV, and sampled rows of dQ and sampled key rows of
// dK and dV are compared with a float64 reference. Each shape runs in the
// default mode and in deterministic mode; deterministic runs twice and must
// match bit for bit. Prints the engine cuDNN chose and any refusal.
//
// Tolerance (the FlashAttention project's backward rule): each gradient's max
// abs error <= 2 x that of a standard implementation in the kernel's
// precision on the same elements, + 2 float32 ulps of (0.3 + |ref|). The
// standard implementation is what the graph states: float32 scores and
// P = exp(tau s - LSE) from the kernel's LSE, D from the kernel's O, P and dS
// rounded to the io dtype before their matmuls, float32 accumulation, each
// per-query-head dK/dV rounded to the io dtype before the GQA group sum.
#pragma once
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <utility>

#include "cudnn_check_util.cuh"

namespace cudnn_check {

// dO (seeded) and the gradients of one problem beside its Buffers; the backward's workspace.
struct GradBuffers {
  const Buffers& f;
  void *dout = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr, *ws = nullptr;
  int64_t ws_bytes = 0;
  GradBuffers(const Buffers& fwd, uint64_t seed) : f(fwd) {
    CHECK_CUDA(cudaMalloc(&dout, f.nq * 2));
    CHECK_CUDA(cudaMalloc(&dq, f.nq * 2));
    CHECK_CUDA(cudaMalloc(&dk, f.nk * 2));
    CHECK_CUDA(cudaMalloc(&dv, f.nk * 2));
    fill(dout, f.nq, f.s.bf16, seed + 3, 1.f);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~GradBuffers() { cudaFree(dout), cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(ws); }
  GradBuffers(const GradBuffers&) = delete;
  GradBuffers& operator=(const GradBuffers&) = delete;
  fa::AttnParams params(bool deterministic) const {
    fa::AttnParams p = f.params();
    p.dout = dout, p.dq = dq, p.dk = dk, p.dv = dv;
    p.deterministic = deterministic;
    p.workspace = ws, p.workspace_bytes = ws_bytes;
    return p;
  }
  // Grows the workspace to what `deterministic` needs, or returns the refusal.
  const char* prepare(bool deterministic) {
    fa::AttnParams p = params(deterministic);
    if (const char* why = Bwd::unsupported(p)) return why;
    int64_t need = Bwd::workspace(p);
    if (need > ws_bytes) {
      cudaFree(ws);
      ws = nullptr;
      CHECK_CUDA(cudaMalloc(&ws, size_t(need)));
      ws_bytes = need;
    }
    return nullptr;
  }
};

// One problem's tensors on the host as floats (BSHD), the kernel's O and LSE among them.
struct HostProblem {
  Shape s;
  std::vector<float> q, k, v, dout, o, lse;
  double scale = 0;
  HostProblem(const Buffers& b, const GradBuffers& g) : s(b.s) {
    q = download(b.q, b.nq, s.bf16), k = download(b.k, b.nk, s.bf16), v = download(b.v, b.nk, s.bf16);
    dout = download(g.dout, b.nq, s.bf16), o = download(b.o, b.nq, s.bf16);
    lse.resize(b.n_lse());
    CHECK_CUDA(cudaMemcpy(lse.data(), b.lse, lse.size() * 4, cudaMemcpyDeviceToHost));
    scale = 1.0 / std::sqrt(double(s.head_dim));
  }
  const float* qrow(const std::vector<float>& x, int b, int i, int h) const {  // Q-like: q, dout, o
    return &x[((size_t(b) * s.seqlen_q + i) * s.heads + h) * s.head_dim];
  }
  const float* krow(const std::vector<float>& x, int b, int j, int hk) const {  // K-like: k, v
    return &x[((size_t(b) * s.seqlen_k + j) * s.heads_kv + hk) * s.head_dim];
  }
  int kv_head(int h) const { return h / (s.heads / s.heads_kv); }
  int last_key(int i) const {  // bottom-right causal
    return s.causal ? std::min(i + s.seqlen_k - s.seqlen_q, s.seqlen_k - 1) : s.seqlen_k - 1;
  }
};

inline double dot(const float* a, const float* b, int n) {
  double acc = 0;
  for (int c = 0; c < n; ++c) acc += double(a[c]) * b[c];
  return acc;
}
inline float dotf(const float* a, const float* b, int n) {
  float acc = 0;
  for (int c = 0; c < n; ++c) acc += a[c] * b[c];
  return acc;
}

// Exact row statistics of query row i: LSE, and D = dO . O with O exact; and
// the D a kernel forms from its own (rounded) O, in float32.
struct RowRef {
  double lse = 0, dsum = 0;
  float dsum_f = 0;
};
inline RowRef row_ref(const HostProblem& H, int b, int h, int i) {
  const int d = H.s.head_dim, hk = H.kv_head(h), last = H.last_key(i);
  const float* q = H.qrow(H.q, b, i, h);
  std::vector<double> sc(size_t(last) + 1);
  double m = -INFINITY;
  for (int j = 0; j <= last; ++j) m = std::max(m, sc[j] = H.scale * dot(q, H.krow(H.k, b, j, hk), d));
  double l = 0;
  for (int j = 0; j <= last; ++j) l += std::exp(sc[j] - m);
  RowRef r;
  r.lse = m + std::log(l);
  std::vector<double> o(size_t(d), 0.0);
  for (int j = 0; j <= last; ++j) {
    const double p = std::exp(sc[j] - r.lse);
    const float* vj = H.krow(H.v, b, j, hk);
    for (int c = 0; c < d; ++c) o[c] += p * vj[c];
  }
  const float* g = H.qrow(H.dout, b, i, h);
  for (int c = 0; c < d; ++c) r.dsum += double(g[c]) * o[c];
  r.dsum_f = dotf(g, H.qrow(H.o, b, i, h), d);
  return r;
}

// The score terms of (row i, key j) both ways: float64 exact and the
// standard implementation's float32 (P and dS before rounding to the dtype).
struct Terms {
  double p = 0, ds = 0;
  float p_f = 0, ds_f = 0;
};
inline Terms terms(const HostProblem& H, const RowRef& r, int b, int h, int i, int j) {
  const int d = H.s.head_dim, hk = H.kv_head(h);
  const float* q = H.qrow(H.q, b, i, h);
  const float* g = H.qrow(H.dout, b, i, h);
  const float* kj = H.krow(H.k, b, j, hk);
  const float* vj = H.krow(H.v, b, j, hk);
  Terms t;
  t.p = std::exp(H.scale * dot(q, kj, d) - r.lse);
  t.ds = t.p * (dot(g, vj, d) - r.dsum) * H.scale;
  const float scale_f = float(H.scale);
  const float lse_kernel = H.lse[(size_t(b) * H.s.heads + h) * H.s.seqlen_q + i];
  t.p_f = std::exp(dotf(q, kj, d) * scale_f - lse_kernel);
  t.ds_f = t.p_f * (dotf(g, vj, d) - r.dsum_f) * scale_f;
  return t;
}

// Max abs error of the kernel and of the standard implementation, and the
// float32 floor, over the sampled elements of one gradient.
struct GradError {
  double kernel = 0, standard = 0, floor = 0;
  void add(double got, double ref, float std_value) {
    kernel = std::max(kernel, std::fabs(got - ref));
    standard = std::max(standard, std::fabs(double(std_value) - ref));
    const float r = float(ref);
    floor = std::max(floor, 2.0 * std::fabs(double((r + 0.3f) - 0.3f) - double(r)));
  }
  bool ok() const { return kernel <= 2 * standard + floor; }
};

struct BwdErrors {
  GradError dq, dk, dv;
  int64_t nonfinite = 0, rows = 0, keys = 0;
  bool ok() const { return nonfinite == 0 && rows > 0 && dq.ok() && (keys == 0 || (dk.ok() && dv.ok())); }
};

// Compares `rows` sampled dQ rows and, when `key_pairs` > 0, 8 sampled key
// rows of dK and dV in each of `key_pairs` (batch, kv head) pairs.
inline BwdErrors compare(const HostProblem& H, const std::vector<float>& dq, const std::vector<float>& dk,
                  const std::vector<float>& dv, int rows, int key_pairs, uint64_t seed) {
  const Shape& s = H.s;
  const int d = s.head_dim, group = s.heads / s.heads_kv;
  const bool bf16 = s.bf16;
  BwdErrors e;
  for (const auto* x : {&dq, &dk, &dv})
    for (float f : *x) e.nonfinite += !std::isfinite(f);
  std::mt19937_64 rng(seed);

  std::vector<double> ref(static_cast<size_t>(d));
  std::vector<float> acc(static_cast<size_t>(d));
  for (int t = 0; t < rows; ++t) {  // dQ_i = sum_j dS_ij K_j
    const int b = int(rng() % s.batch), h = int(rng() % s.heads);
    const int i = t == 0 ? 0 : t == 1 ? s.seqlen_q - 1 : int(rng() % s.seqlen_q);
    const RowRef r = row_ref(H, b, h, i);
    std::fill(ref.begin(), ref.end(), 0.0), std::fill(acc.begin(), acc.end(), 0.f);
    for (int j = 0; j <= H.last_key(i); ++j) {
      const Terms tm = terms(H, r, b, h, i, j);
      const float ds_r = round_to(tm.ds_f, bf16);
      const float* kj = H.krow(H.k, b, j, H.kv_head(h));
      for (int c = 0; c < d; ++c) ref[c] += tm.ds * kj[c], acc[c] += ds_r * kj[c];
    }
    const float* got = H.qrow(dq, b, i, h);
    for (int c = 0; c < d; ++c) e.dq.add(got[c], ref[c], round_to(acc[c], bf16));
    ++e.rows;
  }

  std::vector<double> ref_k(static_cast<size_t>(d)), ref_v(static_cast<size_t>(d));
  std::vector<float> sum_k(static_cast<size_t>(d)), sum_v(static_cast<size_t>(d)), head_k(static_cast<size_t>(d)),
      head_v(static_cast<size_t>(d));
  for (int pair = 0; pair < key_pairs; ++pair) {  // dK_j = sum_i dS_ij Q_i, dV_j = sum_i P_ij dO_i
    const int b = pair == 0 ? 0 : int(rng() % s.batch), hk = pair == 0 ? 0 : int(rng() % s.heads_kv);
    std::map<int, std::vector<RowRef>> stats;  // per query head of the group, every row
    for (int h = hk * group; h < (hk + 1) * group; ++h)
      for (int i = 0; i < s.seqlen_q; ++i) stats[h].push_back(row_ref(H, b, h, i));
    for (int t = 0; t < 8; ++t) {
      const int j = t == 0 ? 0 : t == 1 ? s.seqlen_k - 1 : int(rng() % s.seqlen_k);
      std::fill(ref_k.begin(), ref_k.end(), 0.0), std::fill(ref_v.begin(), ref_v.end(), 0.0);
      std::fill(sum_k.begin(), sum_k.end(), 0.f), std::fill(sum_v.begin(), sum_v.end(), 0.f);
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        std::fill(head_k.begin(), head_k.end(), 0.f), std::fill(head_v.begin(), head_v.end(), 0.f);
        for (int i = 0; i < s.seqlen_q; ++i) {
          if (j > H.last_key(i)) continue;
          const Terms tm = terms(H, stats[h][size_t(i)], b, h, i, j);
          const float p_r = round_to(tm.p_f, bf16), ds_r = round_to(tm.ds_f, bf16);
          const float* qi = H.qrow(H.q, b, i, h);
          const float* gi = H.qrow(H.dout, b, i, h);
          for (int c = 0; c < d; ++c) {
            ref_k[c] += tm.ds * qi[c], ref_v[c] += tm.p * gi[c];
            head_k[c] += ds_r * qi[c], head_v[c] += p_r * gi[c];
          }
        }
        for (int c = 0; c < d; ++c) {  // GQA: the graph's per-head dK/dV is in the io dtype
          sum_k[c] += group > 1 ? round_to(head_k[c], bf16) : head_k[c];
          sum_v[c] += group > 1 ? round_to(head_v[c], bf16) : head_v[c];
        }
      }
      const float* gk = H.krow(dk, b, j, hk);
      const float* gv = H.krow(dv, b, j, hk);
      for (int c = 0; c < d; ++c) {
        e.dk.add(gk[c], ref_k[c], round_to(sum_k[c], bf16));
        e.dv.add(gv[c], ref_v[c], round_to(sum_v[c], bf16));
      }
      ++e.keys;
    }
  }
  return e;
}

// The raw bits of dQ, dK, dV, for the bitwise repeat check.
inline std::vector<uint16_t> grad_bits(const GradBuffers& g) {
  const size_t nq = g.f.nq, nk = g.f.nk;
  std::vector<uint16_t> bits(nq + 2 * nk);
  CHECK_CUDA(cudaMemcpy(bits.data(), g.dq, nq * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(bits.data() + nq, g.dk, nk * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(bits.data() + nq + nk, g.dv, nk * 2, cudaMemcpyDeviceToHost));
  return bits;
}

// Runs the backward once on poisoned gradients (NaN in fp16 and bf16).
inline void run_bwd(const GradBuffers& g, bool deterministic) {
  CHECK_CUDA(cudaMemset(g.dq, 0xff, g.f.nq * 2));
  CHECK_CUDA(cudaMemset(g.dk, 0xff, g.f.nk * 2));
  CHECK_CUDA(cudaMemset(g.dv, 0xff, g.f.nk * 2));
  Bwd::launch(g.params(deterministic), nullptr, "cudnn backward");
  CHECK_CUDA(cudaDeviceSynchronize());
}

// Forward (cuDNN) for O and LSE; nullptr or the forward's refusal.
inline const char* run_forward(Buffers& b) {
  if (const char* why = prepare(b)) return why;
  Fwd::launch(b.params(), nullptr, "cudnn forward");
  CHECK_CUDA(cudaDeviceSynchronize());
  return nullptr;
}

inline std::string plan_text(const GradBuffers& g, bool deterministic) {
  fa::cudnn_sdpa::PlanInfo info;
  if (!fa::cudnn_sdpa::plan_info(g.params(deterministic), SdpaPass::bwd, &info)) return "no plan";
  char buf[160];
  std::snprintf(buf, sizeof(buf), "engine %lld, workspace %lld B, nondeterministic note %s%s",
                (long long)info.engine_index, (long long)info.workspace_bytes, info.nondeterministic ? "yes" : "no",
                info.padding_mask ? ", padding-mask workaround" : "");
  return buf;
}

inline int run_bwd_checks(uint64_t seed, bool quick) {
  std::vector<Shape> shapes = {
      {true, 2, 8, 8, 512, 512, 128, false},
      {true, 2, 8, 8, 512, 512, 128, true},
      {false, 2, 8, 2, 384, 640, 64, true},      // GQA, bottom-right shifted diagonal
      {true, 1, 4, 1, 1, 1000, 256, true},       // MQA, one query row; s_k not a multiple of 128
      {false, 3, 6, 3, 257, 129, 128, false},    // odd lengths, seqlen_q > seqlen_k
      {true, 1, 4, 4, 1024, 1024, 256, true},
      {false, 4, 16, 16, 1000, 1000, 64, true},
      {true, 2, 8, 8, 512, 512, 64, false, 6.f},  // large scores
      {false, 2, 8, 4, 300, 700, 128, true, 6.f},
      {true, 1, 8, 8, 640, 512, 128, true, 1.f, /*expect_refusal=*/true},  // rows that see no key
      {true, 1, 2, 2, 1, 1, 64, false, 1.f, /*expect_refusal=*/true},      // cuDNN refuses s_q = s_k = 1
  };
  if (quick) shapes.resize(3);
  int failures = 0;
  std::printf("\nbackward: dQ rows and dK/dV key rows vs float64 (max abs error / standard-precision error)\n");
  std::printf("%-38s %-7s %19s %19s %19s %6s %-8s %s\n", "shape", "mode", "dq", "dk", "dv", "nonfin", "repeat",
              "verdict");
  for (size_t n = 0; n < shapes.size(); ++n) {
    const Shape& s = shapes[n];
    const uint64_t shape_seed = seed + 7919 * (n + 1);
    Buffers b(s, shape_seed);
    const char* fwd_why = s.expect_refusal ? nullptr : run_forward(b);
    const std::string fwd_refusal = fwd_why ? std::string("forward: ") + fwd_why : "";
    GradBuffers g(b, shape_seed);
    for (bool det : {false, true}) {
      const char* mode = det ? "determ" : "default";
      const char* why = fwd_why ? fwd_refusal.c_str() : g.prepare(det);
      if (why != nullptr || s.expect_refusal) {
        const bool ok = (why != nullptr) == s.expect_refusal;
        failures += !ok;
        std::printf("%-38s %-7s refused=%s: %s  %s\n", s.describe().c_str(), mode, why ? "yes" : "no",
                    why ? why : "-", ok ? "PASS" : "FAIL");
        continue;
      }
      std::printf("%-38s %-7s %s (seed %llu)\n", s.describe().c_str(), mode, plan_text(g, det).c_str(),
                  (unsigned long long)shape_seed);
      run_bwd(g, det);
      const std::vector<uint16_t> first = grad_bits(g);
      run_bwd(g, det);
      const bool same = first == grad_bits(g);
      HostProblem H(b, g);
      const BwdErrors e = compare(H, download(g.dq, b.nq, s.bf16), download(g.dk, b.nk, s.bf16),
                                  download(g.dv, b.nk, s.bf16), 48, 2, shape_seed);
      // Deterministic mode must repeat bit for bit; the default may or may not.
      const bool ok = e.ok() && (same || !det);
      failures += !ok;
      auto pair = [](const GradError& x) {
        char buf[40];
        std::snprintf(buf, sizeof(buf), "%8.3g/%-8.3g%s", x.kernel, x.standard, x.ok() ? "" : "!");
        return std::string(buf);
      };
      std::printf("%-38s %-7s %19s %19s %19s %6lld %-8s %s\n", "", mode, pair(e.dq).c_str(), pair(e.dk).c_str(),
                  pair(e.dv).c_str(), (long long)e.nonfinite, same ? "bitwise" : "differs", ok ? "PASS" : "FAIL");
    }
  }
  return failures;
}

// The papers' benchmark shapes for the backward (batch*seqlen = 16384,
// heads = 2048/head_dim, bf16), both modes; FLOPs by the FlashAttention
// convention, 2.5 x the forward's. Checked before timing: every output
// finite and 16 dQ rows (dK/dV key rows would need the whole attention on
// the host at these lengths; the suite above checks them).
inline int run_bwd_timing(uint64_t seed, FILE* csv) {
  int failures = 0;
  if (csv) std::fprintf(csv, "impl,dtype,causal,hdim,seqlen,batch,heads,ms,tflops\n");
  std::printf("\n%-6s %-6s %-8s %-7s %10s %10s %s\n", "hdim", "causal", "seqlen", "mode", "bwd ms", "TFLOP/s",
              "check (dQ rows, finite)");
  for (int hd : {64, 128}) {
    for (int n : {1024, 2048, 4096, 8192, 16384}) {
      for (bool causal : {false, true}) {
        Shape s{true, 16384 / n, 2048 / hd, 2048 / hd, n, n, hd, causal};
        const uint64_t point_seed = seed + uint64_t(hd) * 100000 + n;
        Buffers b(s, point_seed);
        if (const char* why = run_forward(b)) {
          std::printf("%-6d %-6d %-8d forward refused: %s\n", hd, int(causal), n, why);
          ++failures;
          continue;
        }
        GradBuffers g(b, point_seed);
        for (bool det : {false, true}) {
          const char* mode = det ? "determ" : "default";
          if (const char* why = g.prepare(det)) {
            std::printf("%-6d %-6d %-8d %-7s refused: %s\n", hd, int(causal), n, mode, why);
            ++failures;
            continue;
          }
          run_bwd(g, det);
          HostProblem H(b, g);
          const BwdErrors e = compare(H, download(g.dq, b.nq, true), download(g.dk, b.nk, true),
                                      download(g.dv, b.nk, true), 16, 0, point_seed);
          const bool ok = e.ok();
          failures += !ok;
          fa::AttnParams p = g.params(det);
          const double ms = time_ms([&] { Bwd::launch(p, nullptr, "cudnn backward"); }, 30);
          const double tf = 2.5 * s.flops() / (ms * 1e-3) / 1e12;
          std::printf("%-6d %-6d %-8d %-7s %10.4f %10.1f %s (dq %.3g/%.3g)\n", hd, int(causal), n, mode, ms, tf,
                      ok ? "PASS" : "FAIL", e.dq.kernel, e.dq.standard);
          if (csv)
            std::fprintf(csv, "%s,bf16,%d,%d,%d,%d,%d,%.4f,%.1f\n", det ? "ours_cudnn_bwd_det" : "ours_cudnn_bwd",
                         int(causal), hd, n, s.batch, s.heads, ms, tf);
        }
      }
    }
  }
  return failures;
}

}  // namespace cudnn_check
