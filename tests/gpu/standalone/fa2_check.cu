// Standalone GPU check and timing of the compiled attention kernels (fa1, fa2,
// standard; every entry of gpu_kernel_entries()), independent of the host tool:
// links only the generated instance table, so kernel work can be checked on the
// device before the integrated fa-bench links.
//
//   fa2_check [check] [time] [families=fa2,fa1,standard] [hd=64,128] [seqlens=2048,4096]
//             [seed=N] [csv=FILE]
//
// check: many shapes (ragged, seqlen_q != seqlen_k both ways, seqlen 1, causal,
//   GQA/MQA) against a float64 CPU reference; tolerance = 2 x the max abs error of a
//   standard implementation in the kernel's precision (P and O rounded to the dtype)
//   + a floor; outputs poisoned with NaN first. Exit 1 on any failure.
// time: the paper-fwd points (batch*seqlen = 16384, hidden 2048, bf16), CUDA events,
//   L2 flushed and the stream held before every sample, median of >= 10 samples.
// Exit 77 when there is no CUDA device (ctest reports it as skipped).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu_entry.h"
#include "standalone_util.h"

namespace {

using fa::AttnParams;
using fa::ElemType;
using fa::GpuKernelEntry;
using namespace fa::standalone;  // Shape, key_end, dtype rounding, entry names

// Device buffers for one shape, inputs uploaded once.
struct Buffers {
  Shape s;
  std::vector<float> q, k, v;  // host copies, already rounded to the dtype
  void *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
  float* dlse = nullptr;
  fa::standalone::Workspace work;
  int64_t nq() const { return int64_t(s.batch) * s.seqlen_q * s.heads * s.head_dim; }
  int64_t nkv() const { return int64_t(s.batch) * s.seqlen_k * s.heads_kv * s.head_dim; }
  int64_t nlse() const { return int64_t(s.batch) * s.heads * s.seqlen_q; }

  Buffers(const Shape& shape, uint64_t seed) : s(shape) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<float>& x, int64_t n) {
      x.resize(n);
      for (auto& e : x) e = round_to(nd(rng), s.dtype);
    };
    fill(q, nq());
    for (auto& e : q) e = round_to(e * s.q_scale, s.dtype);
    fill(k, nkv());
    fill(v, nkv());
    dq = upload(q);
    dk = upload(k);
    dv = upload(v);
    CHECK_CUDA(cudaMalloc(&dout, nq() * 2));
    CHECK_CUDA(cudaMalloc(&dlse, nlse() * 4));
  }
  void* upload(const std::vector<float>& x) {
    std::vector<uint16_t> bits(x.size());
    for (size_t i = 0; i < x.size(); ++i) bits[i] = to_bits(x[i], s.dtype);
    void* d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, bits.size() * 2));
    CHECK_CUDA(cudaMemcpy(d, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    return d;
  }
  ~Buffers() {
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
    cudaFree(dlse);
  }
  AttnParams params(const GpuKernelEntry& e) {
    AttnParams p = fa::standalone::problem_params(s.batch, s.heads, s.heads_kv, s.seqlen_q,
                                                  s.seqlen_k, s.head_dim, s.causal, s.dtype);
    p.q = dq;
    p.k = dk;
    p.v = dv;
    p.o = dout;
    p.lse = dlse;
    fa::set_contiguous_strides(p);
    work.attach(p, e.workspace_bytes(p));
    return p;
  }
};

// float64 reference for the given rows of every (batch, head), plus the max abs
// error of a standard implementation in the dtype's precision on the same rows.
struct Reference {
  std::vector<int> rows;
  std::vector<double> o, lse;  // [batch, heads, rows, d], [batch, heads, rows]
  double std_err = 0;
};

Reference reference(const Buffers& B, std::vector<int> rows) {
  const Shape& s = B.s;
  Reference R;
  R.rows = rows;
  const int d = s.head_dim, nr = int(rows.size());
  R.o.assign(int64_t(s.batch) * s.heads * nr * d, 0.0);
  R.lse.assign(int64_t(s.batch) * s.heads * nr, 0.0);
  std::vector<double> errs(s.batch * s.heads, 0.0);
  const double scale = 1.0 / std::sqrt(double(d));
  auto work = [&](int bh) {
    const int b = bh / s.heads, h = bh % s.heads, hk = h / (s.heads / s.heads_kv);
    std::vector<double> sc(s.seqlen_k);
    for (int ri = 0; ri < nr; ++ri) {
      const int i = rows[ri], end = key_end(s, i);
      const float* qi = &B.q[((int64_t(b) * s.seqlen_q + i) * s.heads + h) * d];
      double mx = -INFINITY;
      for (int j = 0; j < end; ++j) {
        const float* kj = &B.k[((int64_t(b) * s.seqlen_k + j) * s.heads_kv + hk) * d];
        double acc = 0;
        for (int c = 0; c < d; ++c) acc += double(qi[c]) * kj[c];
        sc[j] = acc * scale;
        mx = std::max(mx, sc[j]);
      }
      double sum = 0;
      for (int j = 0; j < end; ++j) sum += std::exp(sc[j] - mx);
      double* o = &R.o[(int64_t(bh) * nr + ri) * d];
      std::vector<double> o_std(d, 0.0);
      for (int j = 0; j < end; ++j) {
        const double pj = std::exp(sc[j] - mx);
        const float pj_low = round_to(float(pj / sum), s.dtype);  // P in the dtype
        const float* vj = &B.v[((int64_t(b) * s.seqlen_k + j) * s.heads_kv + hk) * d];
        for (int c = 0; c < d; ++c) {
          o[c] += pj / sum * vj[c];
          o_std[c] += double(pj_low) * vj[c];
        }
      }
      R.lse[int64_t(bh) * nr + ri] = end > 0 ? mx + std::log(sum) : -INFINITY;
      for (int c = 0; c < d; ++c)
        errs[bh] = std::max(errs[bh], std::abs(double(round_to(float(o_std[c]), s.dtype)) - o[c]));
    }
  };
  const int nthreads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 0; t < nthreads; ++t)
    pool.emplace_back([&, t] {
      for (int bh = t; bh < s.batch * s.heads; bh += nthreads) work(bh);
    });
  for (auto& th : pool) th.join();
  for (double e : errs) R.std_err = std::max(R.std_err, e);
  return R;
}

bool runs(const GpuKernelEntry& e, const Shape& s) {
  return e.dtype == s.dtype && (e.head_dim == 0 || e.head_dim == s.head_dim);
}

// Runs entry e once on poisoned outputs and compares; returns true when it passes.
bool check_one(const GpuKernelEntry& e, Buffers& B, const Reference& R) {
  const Shape& s = B.s;
  AttnParams p = B.params(e);
  if (const char* why = e.unsupported(p)) {
    std::printf("  %-32s unsupported: %s\n", entry_name(e).c_str(), why);
    return true;
  }
  CHECK_CUDA(cudaMemset(B.dout, 0xff, B.nq() * 2));  // NaN in bf16 and fp16
  CHECK_CUDA(cudaMemset(B.dlse, 0xff, B.nlse() * 4));
  const int rc = e.launch(p, nullptr);
  cudaError_t sync = cudaDeviceSynchronize();
  if (rc != 0 || sync != cudaSuccess) {
    std::printf("  %-32s ERROR launch=%s sync=%s\n", entry_name(e).c_str(),
                cudaGetErrorString(cudaError_t(rc)), cudaGetErrorString(sync));
    if (sync != cudaSuccess) std::exit(3);  // sticky: the context is gone
    return false;
  }
  std::vector<uint16_t> o(B.nq());
  std::vector<float> lse(B.nlse());
  CHECK_CUDA(cudaMemcpy(o.data(), B.dout, o.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(lse.data(), B.dlse, lse.size() * 4, cudaMemcpyDeviceToHost));

  const int d = s.head_dim, nr = int(R.rows.size());
  double o_err = 0, lse_err = 0;
  int64_t nonfinite = 0;
  for (int bh = 0; bh < s.batch * s.heads; ++bh) {
    const int b = bh / s.heads, h = bh % s.heads;
    for (int ri = 0; ri < nr; ++ri) {
      const int i = R.rows[ri];
      for (int c = 0; c < d; ++c) {
        const float x = from_bits(o[((int64_t(b) * s.seqlen_q + i) * s.heads + h) * d + c], s.dtype);
        if (!std::isfinite(x)) ++nonfinite;
        else o_err = std::max(o_err, std::abs(x - R.o[(int64_t(bh) * nr + ri) * d + c]));
      }
      const double lr = R.lse[int64_t(bh) * nr + ri];
      const float lk = lse[int64_t(bh) * s.seqlen_q + i];
      if (std::isinf(lr)) {
        if (!(std::isinf(lk) && lk < 0)) ++nonfinite;
      } else if (!std::isfinite(lk)) {
        ++nonfinite;
      } else {
        lse_err = std::max(lse_err, std::abs(lk - lr));
      }
    }
  }
  const double floor = s.dtype == ElemType::bf16 ? 1e-3 : 1e-4;
  const double tol = 2 * R.std_err + floor;
  const double lse_tol = 1e-3 + 1e-5 * s.seqlen_k;
  const bool ok = nonfinite == 0 && o_err <= tol && lse_err <= lse_tol;
  std::printf("  %-32s %s o_max_abs=%.3e (tol %.3e) lse_max_abs=%.3e nonfinite=%lld\n",
              entry_name(e).c_str(), ok ? "ok  " : "FAIL", o_err, tol, lse_err,
              (long long)nonfinite);
  return ok;
}

std::vector<int> sample_rows(int seqlen_q, uint64_t seed) {
  std::vector<int> rows;
  if (seqlen_q <= 384) {
    for (int i = 0; i < seqlen_q; ++i) rows.push_back(i);
    return rows;
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 256; ++i) rows.push_back(int(rng() % seqlen_q));
  for (int i : {0, 1, 63, 64, 127, 128, seqlen_q - 2, seqlen_q - 1}) rows.push_back(i);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

bool is_forward(const GpuKernelEntry& e) { return std::strcmp(e.pass, "fwd") == 0; }

int run_checks(const std::string& families, const std::string& hds, uint64_t seed) {
  const auto& entries = fa::gpu_kernel_entries();
  std::vector<std::tuple<int, int, int, int, int>> dims = {
      // batch, heads, heads_kv, seqlen_q, seqlen_k
      {2, 4, 4, 128, 128},   {1, 4, 1, 1, 1},       {2, 6, 2, 257, 190},  {1, 2, 2, 70, 333},
      {1, 3, 3, 1000, 1000}, {1, 4, 1, 513, 2049},  {3, 2, 1, 1, 77},     {1, 2, 2, 2048, 64}};
  int failures = 0, checked = 0;
  for (ElemType dt : {ElemType::bf16, ElemType::f16})
    for (int d : {64, 128, 256}) {
      if (!in_list(hds, std::to_string(d))) continue;
      for (auto [b, h, hkv, sq, sk] : dims)
        for (int variant = 0; variant < 3; ++variant) {
          // 0, 1: normal inputs, causal or not; 2: scores scaled up 8x, causal.
          if (variant == 2 && sq != 257) continue;
          const bool causal = variant != 0;
          Shape s{b, h, hkv, sq, sk, d, causal, dt, variant == 2 ? 8.f : 1.f};
          std::vector<const GpuKernelEntry*> todo;
          for (const auto& e : entries)
            if (is_forward(e) && runs(e, s) && in_list(families, e.family)) todo.push_back(&e);
          if (todo.empty()) continue;
          const uint64_t shape_seed = seed ^ (uint64_t(sq) << 20) ^ (uint64_t(sk) << 40) ^ d ^ causal;
          std::printf("b%d h%d/%d q%d k%d d%d %s%s%s seed=%llu\n", b, h, hkv, sq, sk, d,
                      dtype_name(dt), causal ? " causal" : "", variant == 2 ? " q*8" : "",
                      (unsigned long long)shape_seed);
          Buffers B(s, shape_seed);
          Reference R = reference(B, sample_rows(sq, shape_seed));
          for (const auto* e : todo) {
            ++checked;
            if (!check_one(*e, B, R)) ++failures;
          }
        }
    }
  std::printf("check: %d runs, %d failures\n", checked, failures);
  return failures;
}

int run_timing(const std::string& families, const std::string& hds, const std::string& seqlens,
               const std::string& csv, uint64_t seed) {
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const size_t flush_bytes = size_t(l2) * 2;
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  FILE* out = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
  if (out) std::fprintf(out, "kernel,dtype,causal,head_dim,seqlen,batch,heads,median_ms,p10_ms,p90_ms,samples,tflops\n");
  for (int d : {64, 128, 256}) {
    if (!in_list(hds, std::to_string(d))) continue;
    for (bool causal : {false, true})
      for (int n : {512, 1024, 2048, 4096, 8192, 16384}) {
        if (!in_list(seqlens, std::to_string(n))) continue;
        Shape s{16384 / n, 2048 / d, 2048 / d, n, n, d, causal, ElemType::bf16};
        Buffers B(s, seed + n + d);
        const double flops = 4.0 * s.batch * s.heads * double(n) * n * d / (causal ? 2 : 1);
        for (const auto& e : fa::gpu_kernel_entries()) {
          if (!is_forward(e) || !runs(e, s) || !in_list(families, e.family)) continue;
          AttnParams p = B.params(e);
          if (e.unsupported(p)) continue;
          const Timing t = time_launches([&](cudaStream_t st) { return e.launch(p, st); }, flush, flush_bytes);
          const double tf = t.median_ms > 0 ? flops / (t.median_ms * 1e-3) / 1e12 : 0;
          std::printf("%-32s d%-3d n%-5d %-6s %8.3f ms  %6.1f TFLOP/s  (p10 %.3f p90 %.3f, %d samples)\n",
                      entry_name(e).c_str(), d, n, causal ? "causal" : "", t.median_ms, tf, t.p10_ms,
                      t.p90_ms, t.samples);
          if (out)
            std::fprintf(out, "%s,bf16,%d,%d,%d,%d,%d,%.5f,%.5f,%.5f,%d,%.2f\n", entry_name(e).c_str(),
                         int(causal), d, n, s.batch, s.heads, t.median_ms, t.p10_ms, t.p90_ms,
                         t.samples, tf);
        }
      }
  }
  if (out) std::fclose(out);
  cudaFree(flush);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  bool check = false, timing = false;
  std::string families, hds, seqlens, csv;
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "check") check = true;
    else if (a == "time") timing = true;
    else if (a.rfind("families=", 0) == 0) families = a.substr(9);
    else if (a.rfind("hd=", 0) == 0) hds = a.substr(3);
    else if (a.rfind("seed=", 0) == 0) seed = std::stoull(a.substr(5));
    else if (a.rfind("csv=", 0) == 0) csv = a.substr(4);
    else if (a.rfind("seqlens=", 0) == 0) seqlens = a.substr(8);
    else {
      std::fprintf(stderr, "unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (!check && !timing) check = true;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, seed %llu\n", prop.name, prop.multiProcessorCount,
              (unsigned long long)seed);
  int failures = check ? run_checks(families, hds, seed) : 0;
  if (timing) run_timing(families, hds, seqlens, csv, seed);
  return failures ? 1 : 0;
}
