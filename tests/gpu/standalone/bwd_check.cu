// Standalone GPU check and timing of every compiled backward-pass kernel (each
// gpu_kernel_entries() entry whose pass is "bwd"), independent of the host tool and
// of any forward kernel: O and LSE come from a float64 CPU forward in this file.
//
//   bwd_check [check] [det] [time] [families=fa2,fa1,standard,cudnn] [hd=64,128,256]
//             [seqlens=2048,4096] [kernels=SUBSTRING] [seed=N] [csv=FILE]
//
// check: many shapes (ragged seqlens, seqlen_q != seqlen_k both ways, seqlen 1, causal
//   and not, causal rows that see no key, GQA and MQA, strided views, one large-score
//   case), bf16 and fp16, seeded random Q, K, V, dO; dQ, dK, dV poisoned with NaN
//   before every launch; each entry run with deterministic = false and true. Compared
//   with float64 CPU gradients; per tensor, tolerance = 2 x the max abs error of a
//   standard backward run in the kernel's precision (float32 accumulation; S, P, dP
//   and dS stored in the dtype, dS = P o (dP - rowsum(P o dP)) as a framework's softmax
//   backward forms it) + a floor of (bf16 2e-3, fp16
//   2.5e-4) x the tensor's largest reference value + 1e-5 x the largest reference
//   value of the three gradients. One line per case, entry and mode.
// det: each entry twice with deterministic = true, dQ/dK/dV compared bit for bit
//   (a difference fails); the same for the default mode, reported only.
// time: the paper points (batch*seqlen = 16384, hidden 2048, bf16, seqlen 512..16384,
//   head dims 64/128/256, causal and not); one whole backward launch between CUDA
//   events, L2 flushed (120 MiB memset) and the stream held by a spin kernel before
//   every sample, >= 10 samples, median; TFLOP/s by the 2.5 x forward convention.
//   O and LSE are synthetic there (O random, LSE = log(keys seen) + 1/2, about what
//   unit-variance scores give), as a CPU forward at these sizes would take minutes.
// Exit: 0 all passed, 1 a failure, 2 bad arguments, 3 CUDA error, 77 no CUDA device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

// ---------------------------------------------------------------------------------
// Case names and a thread pool for the CPU reference.

std::string describe(const Shape& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "b%d h%d/%d q%d k%d d%d %s%s%s%s", s.batch, s.heads, s.heads_kv,
                s.seqlen_q, s.seqlen_k, s.head_dim, dtype_name(s.dtype), s.causal ? " causal" : "",
                s.q_scale != 1.f ? " q*8" : "", s.head_pad ? " strided" : "");
  return buf;
}

// Runs fn(task) for task in [0, n) on every core.
void parallel_for(int n, const std::function<void(int)>& fn) {
  const int nthreads = std::max(1, std::min<int>(n, std::thread::hardware_concurrency()));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < nthreads; ++t)
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  for (auto& th : pool) th.join();
}

// Dot products with four partial sums (independent chains the compiler can overlap).
template <typename Acc, typename X, typename Y>
Acc dot(const X* x, const Y* y, int n) {
  Acc a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (int c = 0; c < n; c += 4) {
    a0 += Acc(x[c]) * Acc(y[c]);
    a1 += Acc(x[c + 1]) * Acc(y[c + 1]);
    a2 += Acc(x[c + 2]) * Acc(y[c + 2]);
    a3 += Acc(x[c + 3]) * Acc(y[c + 3]);
  }
  return (a0 + a1) + (a2 + a3);
}
// y += a * x
template <typename Acc, typename X>
void axpy(Acc* y, Acc a, const X* x, int n) {
  for (int c = 0; c < n; ++c) y[c] += a * Acc(x[c]);
}

// ---------------------------------------------------------------------------------
// One test case on the host: inputs (compact [batch][head][row][d], values already in
// the dtype), the forward's O and LSE, float64 gradients and the error of a standard
// backward in the dtype's precision.

enum Tensor { kDQ = 0, kDK = 1, kDV = 2 };
const char* tensor_name(int t) { return t == kDQ ? "dQ" : t == kDK ? "dK" : "dV"; }

struct HostCase {
  Shape s;
  std::vector<float> q, k, v, dout, o, lse;
  std::vector<double> grad[3];  // dq [b][h][sq][d], dk and dv [b][hkv][sk][d]
  double std_err[3] = {0, 0, 0}, ref_max[3] = {0, 0, 0};

  int64_t nq() const { return int64_t(s.batch) * s.heads * s.seqlen_q * s.head_dim; }
  int64_t nkv() const { return int64_t(s.batch) * s.heads_kv * s.seqlen_k * s.head_dim; }
  int64_t nlse() const { return int64_t(s.batch) * s.heads * s.seqlen_q; }
  int64_t count(int t) const { return t == kDQ ? nq() : nkv(); }
  // Compact offsets.
  int64_t qi(int b, int h, int i) const { return ((int64_t(b) * s.heads + h) * s.seqlen_q + i) * s.head_dim; }
  int64_t ki(int b, int h, int j) const { return ((int64_t(b) * s.heads_kv + h) * s.seqlen_k + j) * s.head_dim; }
};

// x[0..n) = scale * N(0, 1) rounded to the dtype; chunks of 64 Ki values from their
// own generators (seeded from `seed` and the chunk) fill in parallel, so the values
// depend on the seed alone.
void fill_normal(std::vector<float>& x, int64_t n, float scale, ElemType dtype, uint64_t seed) {
  constexpr int64_t kChunk = 1 << 16;
  x.resize(n);
  parallel_for(int((n + kChunk - 1) / kChunk), [&](int chunk) {
    std::mt19937_64 rng(seed + 0x9e3779b97f4a7c15ull * uint64_t(chunk + 1));
    std::normal_distribution<float> nd(0.f, 1.f);
    for (int64_t i = chunk * kChunk; i < std::min(n, (chunk + 1) * kChunk); ++i)
      x[i] = round_to(nd(rng) * scale, dtype);
  });
}

void fill_inputs(HostCase& c, uint64_t seed) {
  const Shape& s = c.s;
  fill_normal(c.q, c.nq(), s.q_scale, s.dtype, seed);
  fill_normal(c.k, c.nkv(), 1.f, s.dtype, seed + 1);
  fill_normal(c.v, c.nkv(), 1.f, s.dtype, seed + 2);
  fill_normal(c.dout, c.nq(), 1.f, s.dtype, seed + 3);
}

// Float64 forward (O rounded to the dtype, LSE float32, as a forward kernel leaves
// them), float64 gradients, and the standard backward in the dtype's precision.
void reference(HostCase& c) {
  const Shape& s = c.s;
  const int d = s.head_dim, sq = s.seqlen_q, sk = s.seqlen_k, group = s.heads / s.heads_kv;
  const double scale = 1.0 / std::sqrt(double(d));
  const float scale_f = 1.f / std::sqrt(float(d));
  const int64_t nbh = int64_t(s.batch) * s.heads, mat = int64_t(sq) * sk;
  c.o.assign(c.nq(), 0.f);
  c.lse.assign(c.nlse(), 0.f);
  for (int t = 0; t < 3; ++t) c.grad[t].assign(c.count(t), 0.0);
  // Per (batch, head): P and dS in float64 and, as the standard backward feeds its
  // GEMMs, rounded to the dtype.
  std::vector<double> P(nbh * mat, 0.0), dS(nbh * mat, 0.0);
  std::vector<float> P_low(nbh * mat, 0.f), dS_low(nbh * mat, 0.f);
  std::vector<float> dq_low(c.nq(), 0.f);

  // Phase 1: per query row (tasks of 8 rows).
  constexpr int kRows = 8;
  const int row_tasks = (sq + kRows - 1) / kRows;
  parallel_for(int(nbh) * row_tasks, [&](int task) {
    const int bh = task / row_tasks, b = bh / s.heads, h = bh % s.heads, hk = h / group;
    std::vector<double> sc(sk), o(d), dqr(d);
    std::vector<float> dqf(d);
    for (int i = (task % row_tasks) * kRows; i < std::min(sq, (task % row_tasks + 1) * kRows); ++i) {
      const int end = key_end(s, i);
      const float* qrow = &c.q[c.qi(b, h, i)];
      const float* grow = &c.dout[c.qi(b, h, i)];
      double mx = -INFINITY;
      for (int j = 0; j < end; ++j) {
        sc[j] = scale * dot<double>(qrow, &c.k[c.ki(b, hk, j)], d);
        mx = std::max(mx, sc[j]);
      }
      double sum = 0;
      for (int j = 0; j < end; ++j) sum += std::exp(sc[j] - mx);
      const double lse = end > 0 ? mx + std::log(sum) : -INFINITY;
      std::fill(o.begin(), o.end(), 0.0);
      for (int j = 0; j < end; ++j) axpy(o.data(), std::exp(sc[j] - lse), &c.v[c.ki(b, hk, j)], d);
      float* orow = &c.o[c.qi(b, h, i)];
      for (int x = 0; x < d; ++x) orow[x] = round_to(float(o[x]), s.dtype);
      const float lse_f = float(lse);
      c.lse[int64_t(bh) * sq + i] = lse_f;
      const double D = dot<double>(grow, o.data(), d);  // exact O
      std::fill(dqr.begin(), dqr.end(), 0.0);
      std::fill(dqf.begin(), dqf.end(), 0.f);
      const int64_t row_off = int64_t(bh) * mat + int64_t(i) * sk;
      // The standard in the dtype: P and dP stored in it, then a framework's softmax
      // backward, dS = P o (dP - rowsum(P o dP)) in float32, dS stored in the dtype.
      float D_f = 0.f;
      for (int j = 0; j < end; ++j) {
        const float* krow = &c.k[c.ki(b, hk, j)];
        const float* vrow = &c.v[c.ki(b, hk, j)];
        const double p = std::exp(sc[j] - lse);
        const double ds = p * (dot<double>(grow, vrow, d) - D);
        P[row_off + j] = p;
        dS[row_off + j] = ds;
        axpy(dqr.data(), ds, krow, d);
        const float p_f = std::exp(round_to(dot<float>(qrow, krow, d) * scale_f, s.dtype) - lse_f);
        P_low[row_off + j] = round_to(p_f, s.dtype);
        dS_low[row_off + j] = round_to(dot<float>(grow, vrow, d), s.dtype);  // dP for now
        D_f += P_low[row_off + j] * dS_low[row_off + j];
      }
      for (int j = 0; j < end; ++j) {
        float& ds_low = dS_low[row_off + j];
        ds_low = round_to(P_low[row_off + j] * (ds_low - D_f), s.dtype);
        axpy(dqf.data(), ds_low, &c.k[c.ki(b, hk, j)], d);
      }
      for (int x = 0; x < d; ++x) {
        c.grad[kDQ][c.qi(b, h, i) + x] = scale * dqr[x];
        dq_low[c.qi(b, h, i) + x] = round_to(scale_f * dqf[x], s.dtype);
      }
    }
  });

  // Phase 2: per key column, summed over the K/V head's query heads (tasks of 8 keys,
  // rows outermost so P and dS are read along their rows).
  std::vector<float> dk_low(c.nkv(), 0.f), dv_low(c.nkv(), 0.f);
  const int col_tasks = (sk + kRows - 1) / kRows;
  parallel_for(s.batch * s.heads_kv * col_tasks, [&](int task) {
    const int bhk = task / col_tasks, b = bhk / s.heads_kv, hk = bhk % s.heads_kv;
    const int j0 = (task % col_tasks) * kRows, nj = std::min(sk, j0 + kRows) - j0;
    std::vector<double> dk(kRows * d, 0.0), dv(kRows * d, 0.0);
    std::vector<float> dkf(kRows * d, 0.f), dvf(kRows * d, 0.f);
    for (int h = hk * group; h < (hk + 1) * group; ++h) {
      const int64_t bh = int64_t(b) * s.heads + h;
      for (int i = 0; i < sq; ++i) {
        const float* qrow = &c.q[c.qi(b, h, i)];
        const float* grow = &c.dout[c.qi(b, h, i)];
        for (int jj = 0; jj < nj; ++jj) {
          const int64_t e = bh * mat + int64_t(i) * sk + j0 + jj;
          if (P[e] == 0.0 && dS[e] == 0.0) continue;  // masked (or underflowed)
          axpy(&dv[jj * d], P[e], grow, d);
          axpy(&dk[jj * d], dS[e], qrow, d);
          axpy(&dvf[jj * d], P_low[e], grow, d);
          axpy(&dkf[jj * d], dS_low[e], qrow, d);
        }
      }
    }
    for (int jj = 0; jj < nj; ++jj)
      for (int x = 0; x < d; ++x) {
        const int64_t o = c.ki(b, hk, j0 + jj) + x;
        c.grad[kDK][o] = scale * dk[jj * d + x];
        c.grad[kDV][o] = dv[jj * d + x];
        dk_low[o] = round_to(scale_f * dkf[jj * d + x], s.dtype);
        dv_low[o] = round_to(dvf[jj * d + x], s.dtype);
      }
  });

  const std::vector<float>* low[3] = {&dq_low, &dk_low, &dv_low};
  for (int t = 0; t < 3; ++t)
    for (int64_t x = 0; x < c.count(t); ++x) {
      c.std_err[t] = std::max(c.std_err[t], std::abs(double((*low[t])[x]) - c.grad[t][x]));
      c.ref_max[t] = std::max(c.ref_max[t], std::abs(c.grad[t][x]));
    }
}

// ---------------------------------------------------------------------------------
// Device side: BSHD tensors with heads + head_pad slots per row; the padding slots of
// inputs hold NaN (a kernel that reads them shows it), outputs are poisoned whole.

struct DeviceCase {
  Shape s;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *dout = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  float* lse = nullptr;
  fa::standalone::Workspace work;

  int slots_q() const { return s.heads + s.head_pad; }
  int slots_kv() const { return s.heads_kv + s.head_pad; }
  int64_t alloc_q() const { return int64_t(s.batch) * s.seqlen_q * slots_q() * s.head_dim; }
  int64_t alloc_kv() const { return int64_t(s.batch) * s.seqlen_k * slots_kv() * s.head_dim; }

  explicit DeviceCase(const Shape& shape) : s(shape) {
    CHECK_CUDA(cudaMalloc(&q, alloc_q() * 2));
    CHECK_CUDA(cudaMalloc(&o, alloc_q() * 2));
    CHECK_CUDA(cudaMalloc(&dout, alloc_q() * 2));
    CHECK_CUDA(cudaMalloc(&dq, alloc_q() * 2));
    CHECK_CUDA(cudaMalloc(&k, alloc_kv() * 2));
    CHECK_CUDA(cudaMalloc(&v, alloc_kv() * 2));
    CHECK_CUDA(cudaMalloc(&dk, alloc_kv() * 2));
    CHECK_CUDA(cudaMalloc(&dv, alloc_kv() * 2));
    CHECK_CUDA(cudaMalloc(&lse, int64_t(s.batch) * s.heads * s.seqlen_q * 4));
  }
  DeviceCase(const DeviceCase&) = delete;
  DeviceCase& operator=(const DeviceCase&) = delete;
  ~DeviceCase() {
    for (void* ptr : {q, k, v, o, dout, dq, dk, dv}) cudaFree(ptr);
    cudaFree(lse);
  }

  // Calls f(compact index, device index) for every element of a tensor with `heads`
  // heads of `rows` rows: compact [b][h][row][d] on the host, BSHD with `slots` head
  // slots per row on the device. (Batch, head) pairs run in parallel.
  template <typename F>
  void for_each_element(int heads, int slots, int rows, F f) const {
    const int d = s.head_dim;
    parallel_for(s.batch * heads, [&](int bh) {
      const int b = bh / heads, h = bh % heads;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < d; ++c)
          f(((int64_t(b) * heads + h) * rows + r) * d + c, ((int64_t(b) * rows + r) * slots + h) * d + c);
    });
  }
  void upload(void* dst, const std::vector<float>& x, int heads, int slots, int rows) {
    std::vector<uint16_t> bits(int64_t(s.batch) * rows * slots * s.head_dim, 0xffff);  // NaN padding
    for_each_element(heads, slots, rows, [&](int64_t i, int64_t j) { bits[j] = to_bits(x[i], s.dtype); });
    CHECK_CUDA(cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
  std::vector<float> download(const void* src, int heads, int slots, int rows) {
    std::vector<uint16_t> bits(int64_t(s.batch) * rows * slots * s.head_dim);
    CHECK_CUDA(cudaMemcpy(bits.data(), src, bits.size() * 2, cudaMemcpyDeviceToHost));
    std::vector<float> x(int64_t(s.batch) * heads * rows * s.head_dim);
    for_each_element(heads, slots, rows, [&](int64_t i, int64_t j) { x[i] = from_bits(bits[j], s.dtype); });
    return x;
  }
  void upload_case(const HostCase& c) {
    upload(q, c.q, s.heads, slots_q(), s.seqlen_q);
    upload(dout, c.dout, s.heads, slots_q(), s.seqlen_q);
    upload(o, c.o, s.heads, slots_q(), s.seqlen_q);
    upload(k, c.k, s.heads_kv, slots_kv(), s.seqlen_k);
    upload(v, c.v, s.heads_kv, slots_kv(), s.seqlen_k);
    CHECK_CUDA(cudaMemcpy(lse, c.lse.data(), c.lse.size() * 4, cudaMemcpyHostToDevice));
  }
  std::vector<float> download_grad(int t) {
    if (t == kDQ) return download(dq, s.heads, slots_q(), s.seqlen_q);
    return download(t == kDK ? dk : dv, s.heads_kv, slots_kv(), s.seqlen_k);
  }

  AttnParams params(const GpuKernelEntry& e, bool deterministic) {
    AttnParams p = fa::standalone::problem_params(s.batch, s.heads, s.heads_kv, s.seqlen_q,
                                                  s.seqlen_k, s.head_dim, s.causal, s.dtype);
    p.q = q;
    p.k = k;
    p.v = v;
    p.o = o;
    p.lse = lse;
    p.dout = dout;
    p.dq = dq;
    p.dk = dk;
    p.dv = dv;
    p.deterministic = deterministic;
    const int d = s.head_dim;
    const int64_t qrow = int64_t(slots_q()) * d, kvrow = int64_t(slots_kv()) * d;
    p.q_head_stride = p.o_head_stride = p.do_head_stride = p.dq_head_stride = d;
    p.k_head_stride = p.v_head_stride = p.dk_head_stride = p.dv_head_stride = d;
    p.q_row_stride = p.o_row_stride = p.do_row_stride = p.dq_row_stride = qrow;
    p.k_row_stride = p.v_row_stride = p.dk_row_stride = p.dv_row_stride = kvrow;
    p.q_batch_stride = p.o_batch_stride = p.do_batch_stride = p.dq_batch_stride = qrow * s.seqlen_q;
    p.k_batch_stride = p.v_batch_stride = p.dk_batch_stride = p.dv_batch_stride = kvrow * s.seqlen_k;
    work.attach(p, e.workspace_bytes(p));
    return p;
  }

  // Poisons dQ, dK, dV with NaN (0xffff in bf16 and fp16) and runs one backward.
  // Returns false (after printing) on a launch error; exits on a sticky one.
  bool run(const GpuKernelEntry& e, const AttnParams& p, const char* label) {
    CHECK_CUDA(cudaMemset(dq, 0xff, alloc_q() * 2));
    CHECK_CUDA(cudaMemset(dk, 0xff, alloc_kv() * 2));
    CHECK_CUDA(cudaMemset(dv, 0xff, alloc_kv() * 2));
    const int rc = e.launch(p, nullptr);
    const cudaError_t sync = cudaDeviceSynchronize();
    if (rc == 0 && sync == cudaSuccess) return true;
    std::printf("%s ERROR launch=%s sync=%s\n", label, cudaGetErrorString(cudaError_t(rc)),
                cudaGetErrorString(sync));
    if (sync != cudaSuccess) {
      std::printf("bwd_check: sticky CUDA error, stopping\n");
      std::exit(3);
    }
    return false;
  }
};

struct Filter {
  std::string families, hds, kernels;
  bool wants(const GpuKernelEntry& e) const {
    return std::strcmp(e.pass, "bwd") == 0 && in_list(families, e.family) &&
           (kernels.empty() || entry_name(e).find(kernels) != std::string::npos);
  }
};

bool runs(const GpuKernelEntry& e, const Shape& s) {
  return e.dtype == s.dtype && (e.head_dim == 0 || e.head_dim == s.head_dim);
}

std::vector<const GpuKernelEntry*> entries_for(const Filter& f, const Shape& s) {
  std::vector<const GpuKernelEntry*> out;
  for (const auto& e : fa::gpu_kernel_entries())
    if (f.wants(e) && runs(e, s)) out.push_back(&e);
  return out;
}

// ---------------------------------------------------------------------------------
// check

// Compares one run's gradients; prints one line; returns true when it passes.
bool compare(const HostCase& c, DeviceCase& dc, const std::string& label) {
  const Shape& s = c.s;
  std::string line = label;
  bool ok = true;
  std::string why;
  for (int t = 0; t < 3; ++t) {
    const std::vector<float> got = dc.download_grad(t);
    // The absolute part covers float32 cancellation where an exact gradient is 0:
    // with seqlen_k = 1, dS = P (dP - D) cancels exactly, and a kernel that sums dP
    // and D in different orders leaves ~1e-6 (seen on the H200 for fa2 and fa3,
    // where the standard backward, summing both in one order, leaves 0).
    const double scale = std::max({c.ref_max[0], c.ref_max[1], c.ref_max[2]});
    const double floor = (s.dtype == ElemType::bf16 ? 2e-3 : 2.5e-4) * c.ref_max[t] + 1e-5 * scale + 1e-6;
    const double tol = 2 * c.std_err[t] + floor;
    double err = 0;
    int64_t worst = 0, nonfinite = 0;
    for (int64_t x = 0; x < c.count(t); ++x) {
      if (!std::isfinite(got[x])) {
        if (nonfinite++ == 0) worst = x;
        continue;
      }
      const double e = std::abs(got[x] - c.grad[t][x]);
      if (e > err && nonfinite == 0) {
        err = e;
        worst = x;
      }
    }
    char buf[200];
    std::snprintf(buf, sizeof buf, " %s %.2e/%.2e", tensor_name(t), err, tol);
    line += buf;
    if (nonfinite > 0 || err > tol) {
      ok = false;
      // worst as (batch, row, head, column) of the BSHD tensor
      const int d = s.head_dim, rows = t == kDQ ? s.seqlen_q : s.seqlen_k;
      const int heads = t == kDQ ? s.heads : s.heads_kv;
      const int64_t x = worst;
      const int col = int(x % d), row = int(x / d % rows), head = int(x / d / rows % heads),
                b = int(x / d / rows / heads);
      std::snprintf(buf, sizeof buf, " [%s %s%lld at b%d row%d h%d col%d: got %.5g ref %.5g]",
                    tensor_name(t), nonfinite ? "nonfinite=" : "", (long long)nonfinite, b, row,
                    head, col, double(got[x]), c.grad[t][x]);
      why += buf;
    }
  }
  std::printf("%s %s%s\n", line.c_str(), ok ? "ok" : "FAIL", why.c_str());
  return ok;
}

int run_checks(const Filter& f, uint64_t seed) {
  struct Dims {
    int batch, heads, heads_kv, seqlen_q, seqlen_k;
  };
  const std::vector<Dims> dims = {
      {2, 4, 4, 128, 128},   // whole blocks
      {1, 4, 1, 1, 1},       // seqlen 1, MQA
      {3, 2, 1, 1, 77},      // one query row, ragged keys
      {1, 2, 2, 77, 1},      // one key
      {2, 6, 2, 257, 190},   // ragged, GQA, seqlen_q > seqlen_k
      {1, 2, 2, 70, 333},    // seqlen_q < seqlen_k
      {1, 2, 2, 300, 100},   // causal: the first 200 rows see no key
      {1, 4, 1, 513, 1025},  // MQA, longer
      {1, 3, 3, 640, 640},   // several Q and K/V blocks per CTA
  };
  int failures = 0, runs_done = 0;
  for (ElemType dt : {ElemType::bf16, ElemType::f16})
    for (int d : {64, 128, 256}) {
      if (!in_list(f.hds, std::to_string(d))) continue;
      std::vector<Shape> shapes;
      for (const Dims& m : dims)
        for (bool causal : {false, true})
          shapes.push_back({m.batch, m.heads, m.heads_kv, m.seqlen_q, m.seqlen_k, d, causal, dt});
      shapes.push_back({1, 2, 2, 257, 257, d, true, dt, 8.f});    // large scores
      shapes.push_back({1, 2, 2, 257, 257, d, false, dt, 8.f});
      shapes.push_back({2, 3, 1, 200, 150, d, true, dt, 1.f, 1});  // strided views
      for (const Shape& s : shapes) {
        const auto todo = entries_for(f, s);
        if (todo.empty()) continue;
        const uint64_t case_seed = seed ^ (uint64_t(s.seqlen_q) << 20) ^ (uint64_t(s.seqlen_k) << 36) ^
                                   (uint64_t(d) << 52) ^ (uint64_t(s.causal) << 1) ^
                                   (s.heads * 7 + s.heads_kv) ^ uint64_t(s.q_scale * 3) ^ s.head_pad;
        HostCase c;
        c.s = s;
        fill_inputs(c, case_seed);
        reference(c);
        DeviceCase dc(s);
        dc.upload_case(c);
        for (const auto* e : todo)
          for (bool det : {false, true}) {
            const std::string label = describe(s) + " | " + entry_name(*e) + (det ? " det" : "    ");
            AttnParams p = dc.params(*e, det);
            if (const char* why = e->unsupported(p)) {
              std::printf("%s skipped: unsupported (%s)\n", label.c_str(), why);
              continue;
            }
            ++runs_done;
            if (!dc.run(*e, p, label.c_str()) || !compare(c, dc, label)) {
              ++failures;
              std::printf("  replay: bwd_check check seed=%llu (case seed %llu)\n",
                          (unsigned long long)seed, (unsigned long long)case_seed);
            }
          }
      }
    }
  std::printf("check: %d runs, %d failures\n", runs_done, failures);
  return failures;
}

// ---------------------------------------------------------------------------------
// det

// Random inputs with synthetic O and LSE (no reference needed to compare two runs).
void fill_synthetic(DeviceCase& dc, uint64_t seed) {
  const Shape& s = dc.s;
  HostCase c;
  c.s = s;
  fill_inputs(c, seed);
  fill_normal(c.o, c.nq(), 0.3f, s.dtype, seed + 4);
  c.lse.resize(c.nlse());
  for (int bh = 0; bh < s.batch * s.heads; ++bh)
    for (int i = 0; i < s.seqlen_q; ++i) {
      const int seen = key_end(s, i);
      c.lse[int64_t(bh) * s.seqlen_q + i] = seen > 0 ? std::log(float(seen)) + 0.5f : -INFINITY;
    }
  dc.upload_case(c);
}

std::vector<std::vector<uint16_t>> snapshot(DeviceCase& dc) {
  std::vector<std::vector<uint16_t>> out(3);
  void* src[3] = {dc.dq, dc.dk, dc.dv};
  for (int t = 0; t < 3; ++t) {
    out[t].resize(t == kDQ ? dc.alloc_q() : dc.alloc_kv());
    CHECK_CUDA(cudaMemcpy(out[t].data(), src[t], out[t].size() * 2, cudaMemcpyDeviceToHost));
  }
  return out;
}

// "identical", or where the first difference is.
std::string differ(const std::vector<std::vector<uint16_t>>& a,
                   const std::vector<std::vector<uint16_t>>& b) {
  for (int t = 0; t < 3; ++t)
    for (size_t x = 0; x < a[t].size(); ++x)
      if (a[t][x] != b[t][x]) {
        size_t n = 0;
        for (size_t y = x; y < a[t].size(); ++y) n += a[t][y] != b[t][y];
        return std::string("differ (") + tensor_name(t) + ": " + std::to_string(n) +
               " elements, first at flat index " + std::to_string(x) + ")";
      }
  return "identical";
}

int run_det(const Filter& f, uint64_t seed) {
  int failures = 0, runs_done = 0;
  for (ElemType dt : {ElemType::bf16, ElemType::f16})
    for (int d : {64, 128, 256}) {
      if (!in_list(f.hds, std::to_string(d))) continue;
      for (const Shape& s : {Shape{2, 8, 8, 1536, 1536, d, false, dt},
                             Shape{1, 8, 2, 1000, 1800, d, true, dt}}) {
        const auto todo = entries_for(f, s);
        if (todo.empty()) continue;
        DeviceCase dc(s);
        fill_synthetic(dc, seed + d);
        for (const auto* e : todo) {
          const std::string label = describe(s) + " | " + entry_name(*e);
          std::string result[2];
          bool ran = true;
          for (bool det : {true, false}) {
            AttnParams p = dc.params(*e, det);
            if (const char* why = e->unsupported(p)) {
              std::printf("%s skipped: unsupported (%s)\n", label.c_str(), why);
              ran = false;
              break;
            }
            if (!dc.run(*e, p, label.c_str())) {
              ++failures;
              ran = false;
              break;
            }
            const auto first = snapshot(dc);
            if (!dc.run(*e, p, label.c_str())) {
              ++failures;
              ran = false;
              break;
            }
            result[det ? 0 : 1] = differ(first, snapshot(dc));
          }
          if (!ran) continue;
          ++runs_done;
          const bool ok = result[0] == "identical";
          if (!ok) ++failures;
          std::printf("%s deterministic: %s; default: %s %s\n", label.c_str(), result[0].c_str(),
                      result[1].c_str(), ok ? "ok" : "FAIL");
        }
      }
    }
  std::printf("det: %d entries, %d failures\n", runs_done, failures);
  return failures;
}

// ---------------------------------------------------------------------------------
// time

int run_timing(const Filter& f, const std::string& seqlens, const std::string& csv, uint64_t seed) {
  const size_t flush_bytes = size_t(120) << 20;
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  FILE* out = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
  if (!csv.empty() && !out) {
    std::fprintf(stderr, "cannot write csv=%s\n", csv.c_str());
    return 1;
  }
  if (out)
    std::fprintf(out, "kernel,dtype,causal,head_dim,seqlen,batch,heads,deterministic,median_ms,"
                      "p10_ms,p90_ms,samples,tflops\n");
  std::printf("%-34s %4s %6s %6s %5s %9s %9s\n", "entry", "hd", "causal", "seqlen", "det", "ms",
              "TFLOP/s");
  int errors = 0;
  for (int d : {64, 128, 256}) {
    if (!in_list(f.hds, std::to_string(d))) continue;
    for (bool causal : {false, true})
      for (int n : {512, 1024, 2048, 4096, 8192, 16384}) {
        if (!in_list(seqlens, std::to_string(n))) continue;
        const Shape s{16384 / n, 2048 / d, 2048 / d, n, n, d, causal, ElemType::bf16};
        const auto todo = entries_for(f, s);
        if (todo.empty()) continue;
        DeviceCase dc(s);
        fill_synthetic(dc, seed + n + d);
        const double flops =
            2.5 * 4.0 * s.batch * s.heads * double(n) * n * d / (causal ? 2 : 1);
        for (const auto* e : todo)
          for (bool det : {false, true}) {
            AttnParams p = dc.params(*e, det);
            if (e->unsupported(p)) continue;
            const Timing t =
                time_launches([&](cudaStream_t st) { return e->launch(p, st); }, flush, flush_bytes);
            if (t.samples == 0) {
              std::printf("%-34s %4d %6s %6d %5s launch failed\n", entry_name(*e).c_str(), d,
                          causal ? "yes" : "no", n, det ? "yes" : "no");
              ++errors;
              continue;
            }
            const double tf = flops / (t.median_ms * 1e-3) / 1e12;
            std::printf("%-34s %4d %6s %6d %5s %9.3f %9.1f\n", entry_name(*e).c_str(), d,
                        causal ? "yes" : "no", n, det ? "yes" : "no", t.median_ms, tf);
            if (out)
              std::fprintf(out, "%s,bf16,%d,%d,%d,%d,%d,%d,%.5f,%.5f,%.5f,%d,%.2f\n",
                           entry_name(*e).c_str(), int(causal), d, n, s.batch, s.heads, int(det),
                           t.median_ms, t.p10_ms, t.p90_ms, t.samples, tf);
          }
      }
  }
  if (out) std::fclose(out);
  cudaFree(flush);
  std::printf("time: %d launch failures\n", errors);
  return errors;
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, det = false, timing = false;
  Filter f;
  std::string seqlens, csv;
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    try {
      if (a == "check") check = true;
      else if (a == "det") det = true;
      else if (a == "time") timing = true;
      else if (a.rfind("families=", 0) == 0) f.families = a.substr(9);
      else if (a.rfind("hd=", 0) == 0) f.hds = a.substr(3);
      else if (a.rfind("kernels=", 0) == 0) f.kernels = a.substr(8);
      else if (a.rfind("seqlens=", 0) == 0) seqlens = a.substr(8);
      else if (a.rfind("csv=", 0) == 0) csv = a.substr(4);
      else if (a.rfind("seed=", 0) == 0) seed = std::stoull(a.substr(5));
      else throw std::invalid_argument("unknown");
    } catch (const std::exception&) {
      std::fprintf(stderr, "bwd_check: bad argument '%s' (modes: check det time; options: "
                           "families= hd= kernels= seqlens= seed= csv=)\n", a.c_str());
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  if (!check && !det && !timing) check = det = true;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int n_entries = 0;
  for (const auto& e : fa::gpu_kernel_entries()) n_entries += f.wants(e);
  std::printf("device: %s, %d SMs; seed %llu; %d backward entries selected\n", prop.name,
              prop.multiProcessorCount, (unsigned long long)seed, n_entries);
  if (n_entries == 0) {
    std::printf("bwd_check: no backward entry matches the filters: nothing checked\n");
    return 1;
  }
  const int check_fail = check ? run_checks(f, seed) : 0;
  const int det_fail = det ? run_det(f, seed) : 0;
  const int time_fail = timing ? run_timing(f, seqlens, csv, seed) : 0;
  const bool ok = check_fail == 0 && det_fail == 0 && time_fail == 0;
  std::printf("bwd_check: %s (check failures %d, det failures %d, timing launch failures %d)\n",
              ok ? "PASS" : "FAIL", check_fail, det_fail, time_fail);
  return ok ? 0 : 1;
}
