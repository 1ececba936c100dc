// The cudnn family on its own: forward correctness against a float64 CPU
// reference on sampled rows (outputs poisoned first), the backward likewise
// (cudnn_check_bwd.cuh), then timing at the FlashAttention papers' shapes,
// then (optionally) the DRAM counters at GPT-2 medium.
//
//   cudnn_check [quick] [time] [bwdtime] [counters] [--csv=PATH] [--bwd-csv=PATH]
//     (always)   forward and backward correctness suites (quick: the first three
//                shapes of each); exit 1 on any failure
//     time       + forward timings at the papers' shapes (CUDA events, L2 flushed, median)
//     bwdtime    + backward timings there, default and deterministic mode
//     counters   + CUPTI DRAM bytes of one forward at b64 h16 s1024 d64 fp16
//
// Exits 77 (skipped) without a CUDA device. Forward tolerance (the FlashAttention
// project's rule): O max abs error <= 2 x that of a standard implementation in
// the kernel's precision (float32 scores, P rounded to the dtype before P V)
// on the same rows, + a floor; LSE within 1e-3 relative. Seeds are printed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "check_cuda_throw.h"
#include "cudnn_check_bwd.cuh"
#include "cudnn_check_util.cuh"
#include "measure/counters.h"

namespace {

using namespace cudnn_check;

struct Errors {
  double o_max_abs = 0, o_std_max_abs = 0, lse_max_rel = 0;
  int64_t nonfinite = 0, rows = 0;
};

// Runs once on poisoned outputs and compares `rows` sampled (batch, head, row)
// triples with float64 (and the standard-precision baseline).
Errors validate(Buffers& b, int samples, uint64_t seed) {
  const Shape& s = b.s;
  CHECK_CUDA(cudaMemset(b.o, 0xff, b.nq * 2));  // NaN in fp16 and bf16
  CHECK_CUDA(cudaMemset(b.lse, 0xff, size_t(s.batch) * s.heads * s.seqlen_q * 4));
  Fwd::launch(b.params(), nullptr, "cudnn forward");
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<uint16_t> hq(b.nq), hk(b.nk), hv(b.nk), ho(b.nq);
  std::vector<float> hl(size_t(s.batch) * s.heads * s.seqlen_q);
  CHECK_CUDA(cudaMemcpy(hq.data(), b.q, b.nq * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hk.data(), b.k, b.nk * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hv.data(), b.v, b.nk * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(ho.data(), b.o, b.nq * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hl.data(), b.lse, hl.size() * 4, cudaMemcpyDeviceToHost));

  Errors err;
  // Every output element must have been written (no NaN left from the poison).
  for (uint16_t x : ho) err.nonfinite += !std::isfinite(to_float(x, s.bf16));
  for (float x : hl) err.nonfinite += !std::isfinite(x);

  std::mt19937_64 rng(seed);
  const int d = s.head_dim, group = s.heads / s.heads_kv;
  const double scale = 1.0 / std::sqrt(double(d));
  std::vector<double> sc(static_cast<size_t>(s.seqlen_k)), o_ref(static_cast<size_t>(d)), o_std(static_cast<size_t>(d));
  std::vector<float> sf(static_cast<size_t>(s.seqlen_k));
  for (int t = 0; t < samples; ++t) {
    int bi = int(rng() % s.batch), h = int(rng() % s.heads);
    int row = t == 0 ? 0 : t == 1 ? s.seqlen_q - 1 : int(rng() % s.seqlen_q);
    int hk_ = h / group;
    int last = s.causal ? row + s.seqlen_k - s.seqlen_q : s.seqlen_k - 1;  // bottom-right
    last = std::min(last, s.seqlen_k - 1);
    if (last < 0) continue;  // refused shapes only
    auto qv = [&](int c) { return to_float(hq[((size_t(bi) * s.seqlen_q + row) * s.heads + h) * d + c], s.bf16); };
    auto kv = [&](const std::vector<uint16_t>& x, int j, int c) {
      return to_float(x[((size_t(bi) * s.seqlen_k + j) * s.heads_kv + hk_) * d + c], s.bf16);
    };
    double m = -INFINITY;
    float mf = -INFINITY;
    for (int j = 0; j <= last; ++j) {
      double acc = 0;
      float accf = 0;
      for (int c = 0; c < d; ++c) {
        acc += double(qv(c)) * kv(hk, j, c);
        accf += qv(c) * kv(hk, j, c);
      }
      sc[j] = acc * scale, sf[j] = accf * float(scale);
      m = std::max(m, sc[j]), mf = std::max(mf, sf[j]);
    }
    double l = 0;
    float lf = 0;
    for (int j = 0; j <= last; ++j) l += std::exp(sc[j] - m), lf += std::exp(sf[j] - mf);
    std::fill(o_ref.begin(), o_ref.end(), 0.0);
    std::fill(o_std.begin(), o_std.end(), 0.0);
    for (int j = 0; j <= last; ++j) {
      double p = std::exp(sc[j] - m) / l;
      float pf = round_to(std::exp(sf[j] - mf) / lf, s.bf16);  // P in the kernel's dtype
      for (int c = 0; c < d; ++c) o_ref[c] += p * kv(hv, j, c), o_std[c] += double(pf * kv(hv, j, c));
    }
    for (int c = 0; c < d; ++c) {
      double got = to_float(ho[((size_t(bi) * s.seqlen_q + row) * s.heads + h) * d + c], s.bf16);
      err.o_max_abs = std::max(err.o_max_abs, std::fabs(got - o_ref[c]));
      err.o_std_max_abs = std::max(err.o_std_max_abs, std::fabs(double(round_to(float(o_std[c]), s.bf16)) - o_ref[c]));
    }
    double lse_ref = m + std::log(l);
    double lse_got = hl[(size_t(bi) * s.heads + h) * s.seqlen_q + row];
    err.lse_max_rel = std::max(err.lse_max_rel, std::fabs(lse_got - lse_ref) / std::max(1.0, std::fabs(lse_ref)));
    ++err.rows;
  }
  return err;
}

double o_floor(bool bf16) { return bf16 ? 2e-3 : 3e-4; }

bool passes(const Errors& e, bool bf16) {
  return e.nonfinite == 0 && e.rows > 0 && e.o_max_abs <= 2 * e.o_std_max_abs + o_floor(bf16) &&
         e.lse_max_rel <= 1e-3;
}

int run_checks(uint64_t seed, bool quick) {
  std::vector<Shape> shapes = {
      {true, 2, 8, 8, 512, 512, 128, false},
      {true, 2, 8, 8, 512, 512, 128, true},
      {false, 2, 8, 2, 384, 640, 64, true},      // GQA, bottom-right shifted diagonal
      {true, 1, 4, 1, 1, 1000, 256, true},       // MQA, one query row sees every key
      {false, 3, 6, 3, 257, 129, 128, false},    // odd lengths, seqlen_q > seqlen_k
      {true, 1, 16, 16, 1024, 1024, 256, true},
      {false, 4, 16, 16, 1000, 1000, 64, true},
      {true, 2, 8, 8, 512, 512, 64, false, 6.f},  // large scores: max changes late in rows
      {false, 2, 8, 4, 300, 700, 128, true, 6.f},
      {true, 1, 8, 8, 640, 512, 128, true, 1.f, /*expect_refusal=*/true},  // rows that see no key
  };
  int failures = 0;
  std::printf("%-40s %10s %10s %10s %8s %6s  %s\n", "shape", "o_err", "std_err", "lse_rel", "nonfin", "rows", "verdict");
  if (quick) shapes.resize(3);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    uint64_t shape_seed = seed + 1000 * i;
    Buffers b(s, shape_seed);
    const char* why = prepare(b);
    if (why != nullptr || s.expect_refusal) {
      bool ok = (why != nullptr) == s.expect_refusal;
      failures += !ok;
      std::printf("%-40s refused=%s: %s  %s\n", s.describe().c_str(), why ? "yes" : "no", why ? why : "-",
                  ok ? "PASS" : "FAIL");
      continue;
    }
    Errors e = validate(b, 96, shape_seed);
    bool ok = passes(e, s.bf16);
    failures += !ok;
    std::printf("%-40s %10.3g %10.3g %10.3g %8lld %6lld  %s (seed %llu, workspace %lld B)\n",
                s.describe().c_str(), e.o_max_abs, e.o_std_max_abs, e.lse_max_rel, (long long)e.nonfinite,
                (long long)e.rows, ok ? "PASS" : "FAIL", (unsigned long long)shape_seed, (long long)b.ws_bytes);
  }
  return failures;
}

// The papers' forward benchmark: batch*seqlen = 16384, heads = 2048/head_dim, bf16.
int run_timing(uint64_t seed, FILE* csv) {
  int failures = 0;
  if (csv) std::fprintf(csv, "impl,dtype,causal,hdim,seqlen,batch,heads,ms,tflops\n");
  std::printf("\n%-6s %-6s %-8s %10s %10s %s\n", "hdim", "causal", "seqlen", "ms", "TFLOP/s", "check");
  for (int hd : {64, 128}) {
    for (int n : {1024, 2048, 4096, 8192, 16384}) {
      for (bool causal : {false, true}) {
        Shape s{true, 16384 / n, 2048 / hd, 2048 / hd, n, n, hd, causal};
        Buffers b(s, seed + uint64_t(hd) * 100000 + n);
        if (const char* why = prepare(b)) {
          std::printf("%-6d %-6d %-8d refused: %s\n", hd, int(causal), n, why);
          ++failures;
          continue;
        }
        Errors e = validate(b, 16, seed + n);  // validated before it is timed
        bool ok = passes(e, true);
        failures += !ok;
        fa::AttnParams p = b.params();
        double ms = time_ms([&] { Fwd::launch(p, nullptr, "cudnn forward"); }, 30);
        double tf = s.flops() / (ms * 1e-3) / 1e12;
        std::printf("%-6d %-6d %-8d %10.4f %10.1f %s\n", hd, int(causal), n, ms, tf, ok ? "PASS" : "FAIL");
        if (csv) std::fprintf(csv, "ours_cudnn,bf16,%d,%d,%d,%d,%d,%.4f,%.1f\n", int(causal), hd, n, s.batch, s.heads, ms, tf);
      }
    }
  }
  return failures;
}

// DRAM bytes of one forward at the FlashAttention paper's GPT-2 medium shape.
int run_counters(uint64_t seed) {
  Shape s{false, 64, 16, 16, 1024, 1024, 64, false};
  Buffers b(s, seed);
  if (const char* why = prepare(b)) {
    std::printf("counters: refused: %s\n", why);
    return 1;
  }
  fa::AttnParams p = b.params();
  std::string why;
  auto c = fa::measure_dram_bytes([&] { Fwd::launch(p, nullptr, "cudnn forward"); }, &why);
  if (!c) {
    std::printf("counters: unavailable: %s\n", why.c_str());
    return 1;
  }
  double io = double(b.nq + 2 * b.nk) * 2, out = double(b.nq) * 2 + double(s.batch) * s.heads * s.seqlen_q * 4;
  std::printf("\ncounters %s: DRAM read %.3f GB (Q+K+V %.3f GB), written %.3f GB (O+LSE %.3f GB), L2 hit %.1f%%\n",
              s.describe().c_str(), c->read_bytes / 1e9, io / 1e9, c->write_bytes / 1e9, out / 1e9, c->l2_hit_rate);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cudnn_check: no CUDA device, skipped\n");
    return 77;
  }
  uint64_t seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  const char* fixed = std::getenv("FA_SEED");
  if (fixed) seed = std::strtoull(fixed, nullptr, 10);
  std::printf("cudnn_check: cuDNN %s, seed %llu (FA_SEED=... replays)\n", fa::cudnn_sdpa::runtime_version(),
              (unsigned long long)seed);
  bool quick = false, timing = false, bwd_timing = false, counters = false;
  std::string csv_path, bwd_csv_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "quick") quick = true;
    else if (a == "time") timing = true;
    else if (a == "bwdtime") bwd_timing = true;
    else if (a == "counters") counters = true;
    else if (a.rfind("--csv=", 0) == 0) csv_path = a.substr(6);
    else if (a.rfind("--bwd-csv=", 0) == 0) bwd_csv_path = a.substr(10);
    else {
      std::fprintf(stderr, "cudnn_check: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    int failures = run_checks(seed, quick);
    failures += run_bwd_checks(seed, quick);
    if (timing) {
      FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
      failures += run_timing(seed, csv);
      if (csv) std::fclose(csv);
    }
    if (bwd_timing) {
      FILE* csv = bwd_csv_path.empty() ? nullptr : std::fopen(bwd_csv_path.c_str(), "w");
      failures += run_bwd_timing(seed, csv);
      if (csv) std::fclose(csv);
    }
    if (counters) failures += run_counters(seed);
    std::printf("cudnn_check: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudnn_check: error: %s (seed %llu)\n", e.what(), (unsigned long long)seed);
    return 1;
  }
}
