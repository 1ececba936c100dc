// The cudnn family on its own: correctness against a float64 CPU reference on
// sampled rows (outputs poisoned first), then timing at the FlashAttention
// papers' forward shapes, then (optionally) the DRAM counters at GPT-2 medium.
//
//   cudnn_check [quick] [time] [counters] [--csv=PATH]
//     (always)   correctness suite (quick: its first three shapes); exit 1 on any failure
//     time       + timings at the papers' forward shapes (CUDA events, L2 flushed, median)
//     counters   + CUPTI DRAM bytes of one forward at b64 h16 s1024 d64 fp16
//
// Exits 77 (skipped) without a CUDA device. Tolerance (the FlashAttention
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
#include "cudnn/cudnn_sdpa.cuh"
#include "measure/counters.h"

namespace {

struct Shape {
  bool bf16 = true;
  int batch = 1, heads = 1, heads_kv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 64;
  bool causal = false;
  float input_scale = 1.f;     // > 1: large scores (online-softmax stress)
  bool expect_refusal = false;
  std::string describe() const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s b%d h%d/%d q%d k%d d%d%s%s", bf16 ? "bf16" : "fp16", batch, heads,
                  heads_kv, seqlen_q, seqlen_k, head_dim, causal ? " causal" : "",
                  input_scale != 1.f ? " large" : "");
    return buf;
  }
  double flops() const {
    return 4.0 * batch * heads * double(seqlen_q) * seqlen_k * head_dim * (causal ? 0.5 : 1.0);
  }
};

// Seeded N(0,1) * scale from a counter hash (Box-Muller), rounded to the dtype.
__device__ uint64_t mix(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
  return x;
}
template <typename T>
__global__ void fill_normal(T* out, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t h = mix(seed ^ mix(i + 1));
    float u1 = (float((h >> 40) & 0xffffff) + 1.f) / 16777217.f, u2 = float((h >> 8) & 0xffffff) / 16777216.f;
    float z = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2) * scale;
    if constexpr (std::is_same_v<T, __half>) out[i] = __float2half_rn(z);
    else out[i] = __float2bfloat16_rn(z);
  }
}

float to_float(uint16_t bits, bool bf16) {
  if (bf16) {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  __half_raw r;
  r.x = bits;
  return __half2float(__half(r));
}
float round_to(float x, bool bf16) {
  return bf16 ? __bfloat162float(__float2bfloat16_rn(x)) : __half2float(__float2half_rn(x));
}

struct Buffers {
  Shape s;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *ws = nullptr;
  float* lse = nullptr;
  int64_t ws_bytes = 0;
  size_t nq = 0, nk = 0;
  explicit Buffers(const Shape& sh, uint64_t seed) : s(sh) {
    nq = size_t(s.batch) * s.seqlen_q * s.heads * s.head_dim;
    nk = size_t(s.batch) * s.seqlen_k * s.heads_kv * s.head_dim;
    CHECK_CUDA(cudaMalloc(&q, nq * 2));
    CHECK_CUDA(cudaMalloc(&k, nk * 2));
    CHECK_CUDA(cudaMalloc(&v, nk * 2));
    CHECK_CUDA(cudaMalloc(&o, nq * 2));
    CHECK_CUDA(cudaMalloc(&lse, size_t(s.batch) * s.heads * s.seqlen_q * 4));
    void* bufs[3] = {q, k, v};
    size_t ns[3] = {nq, nk, nk};
    for (int i = 0; i < 3; ++i) {
      if (s.bf16) fill_normal<<<1024, 256>>>((__nv_bfloat16*)bufs[i], ns[i], seed + i, s.input_scale);
      else fill_normal<<<1024, 256>>>((__half*)bufs[i], ns[i], seed + i, s.input_scale);
      CHECK_CUDA(cudaGetLastError());
    }
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~Buffers() {
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse), cudaFree(ws);
  }
  fa::AttnParams params() const {
    fa::AttnParams p;
    p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
    p.batch = s.batch, p.heads = s.heads, p.heads_kv = s.heads_kv;
    p.seqlen_q = s.seqlen_q, p.seqlen_k = s.seqlen_k, p.head_dim = s.head_dim;
    fa::set_contiguous_strides(p);
    p.softmax_scale = 1.f / std::sqrt(float(s.head_dim));
    p.softmax_scale_log2 = p.softmax_scale * 1.4426950408889634f;
    p.causal = s.causal;
    p.dtype = s.bf16 ? fa::ElemType::bf16 : fa::ElemType::f16;
    p.workspace = ws, p.workspace_bytes = ws_bytes;
    return p;
  }
};

using Bf16Entry = fa::CudnnSdpa<__nv_bfloat16, 0, 0, 0, 0, 0>;
using Fp16Entry = fa::CudnnSdpa<__half, 0, 0, 0, 0, 0>;
const char* unsupported(const fa::AttnParams& p) {
  return p.dtype == fa::ElemType::bf16 ? Bf16Entry::unsupported(p) : Fp16Entry::unsupported(p);
}
int64_t workspace(const fa::AttnParams& p) {
  return p.dtype == fa::ElemType::bf16 ? Bf16Entry::workspace_bytes(p) : Fp16Entry::workspace_bytes(p);
}
void launch(const fa::AttnParams& p, cudaStream_t st) {
  int e = p.dtype == fa::ElemType::bf16 ? Bf16Entry::launch(p, st) : Fp16Entry::launch(p, st);
  if (e != 0) throw std::runtime_error(std::string("cudnn launch: ") + cudaGetErrorString(cudaError_t(e)));
  CHECK_CUDA(cudaGetLastError());
}

// Plans the workspace, or returns the refusal.
const char* prepare(Buffers& b) {
  fa::AttnParams p = b.params();
  if (const char* why = unsupported(p)) return why;
  b.ws_bytes = workspace(p);
  if (b.ws_bytes > 0) CHECK_CUDA(cudaMalloc(&b.ws, size_t(b.ws_bytes)));
  return nullptr;
}

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
  launch(b.params(), nullptr);
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

// Median of CUDA-event samples, each after writing 2x L2 (cold cache).
double time_ms(Buffers& b, int samples) {
  int dev = 0, l2 = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  size_t flush_bytes = 2 * size_t(l2);
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  fa::AttnParams p = b.params();
  for (int i = 0; i < 3; ++i) launch(p, nullptr);  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    CHECK_CUDA(cudaEventRecord(e0));
    launch(p, nullptr);
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  cudaEventDestroy(e0), cudaEventDestroy(e1), cudaFree(flush);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
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
        double ms = time_ms(b, 30);
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
  auto c = fa::measure_dram_bytes([&] { launch(p, nullptr); }, &why);
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
  bool quick = false, timing = false, counters = false;
  std::string csv_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "quick") quick = true;
    else if (a == "time") timing = true;
    else if (a == "counters") counters = true;
    else if (a.rfind("--csv=", 0) == 0) csv_path = a.substr(6);
    else {
      std::fprintf(stderr, "cudnn_check: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    int failures = run_checks(seed, quick);
    if (timing) {
      FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
      failures += run_timing(seed, csv);
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
