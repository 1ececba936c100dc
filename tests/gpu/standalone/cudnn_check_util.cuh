// What cudnn_check's forward and backward suites share: seeded inputs on the
// device, 16-bit conversions on the host, the buffers of one problem, the
// cudnn entries by dtype and pass, and the cold-L2 event timer.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "check_cuda_throw.h"
#include "cudnn/cudnn_sdpa.cuh"

namespace cudnn_check {

using fa::cudnn::SdpaPass;

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
  // The forward's FLOPs (two matmuls), causal halved.
  double flops() const {
    return 4.0 * batch * heads * double(seqlen_q) * seqlen_k * head_dim * (causal ? 0.5 : 1.0);
  }
};

// Seeded N(0,1) * scale from a counter hash (Box-Muller), rounded to the dtype.
__device__ inline uint64_t mix(uint64_t x) {
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
inline void fill(void* dst, size_t n, bool bf16, uint64_t seed, float scale) {
  if (bf16) fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(dst), n, seed, scale);
  else fill_normal<<<1024, 256>>>(static_cast<__half*>(dst), n, seed, scale);
  CHECK_CUDA(cudaGetLastError());
}

inline float to_float(uint16_t bits, bool bf16) {
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
inline float round_to(float x, bool bf16) {
  return bf16 ? __bfloat162float(__float2bfloat16_rn(x)) : __half2float(__float2half_rn(x));
}
// A 16-bit device buffer as floats on the host.
inline std::vector<float> download(const void* src, size_t n, bool bf16) {
  std::vector<uint16_t> bits(n);
  CHECK_CUDA(cudaMemcpy(bits.data(), src, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = to_float(bits[i], bf16);
  return out;
}

// Q, K, V (seeded), O and LSE of one problem, contiguous BSHD; the forward's workspace.
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
    fill(q, nq, s.bf16, seed + 0, s.input_scale);
    fill(k, nk, s.bf16, seed + 1, s.input_scale);
    fill(v, nk, s.bf16, seed + 2, s.input_scale);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~Buffers() { cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse), cudaFree(ws); }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  size_t n_lse() const { return size_t(s.batch) * s.heads * s.seqlen_q; }
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

// The generated instantiations' templates, picked by dtype and pass.
template <template <typename, int, int, int, int, int> class Entry>
struct ByDtype {
  using Bf16 = Entry<__nv_bfloat16, 0, 0, 0, 0, 0>;
  using Fp16 = Entry<__half, 0, 0, 0, 0, 0>;
  static bool bf16(const fa::AttnParams& p) { return p.dtype == fa::ElemType::bf16; }
  static const char* unsupported(const fa::AttnParams& p) {
    return bf16(p) ? Bf16::unsupported(p) : Fp16::unsupported(p);
  }
  static int64_t workspace(const fa::AttnParams& p) {
    return bf16(p) ? Bf16::workspace_bytes(p) : Fp16::workspace_bytes(p);
  }
  static void launch(const fa::AttnParams& p, cudaStream_t st, const char* what) {
    int e = bf16(p) ? Bf16::launch(p, st) : Fp16::launch(p, st);
    if (e != 0) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(cudaError_t(e)));
    CHECK_CUDA(cudaGetLastError());
  }
};
using Fwd = ByDtype<fa::CudnnSdpa>;
using Bwd = ByDtype<fa::CudnnSdpaBwd>;

// Plans the forward's workspace, or returns the refusal.
inline const char* prepare(Buffers& b) {
  fa::AttnParams p = b.params();
  if (const char* why = Fwd::unsupported(p)) return why;
  b.ws_bytes = Fwd::workspace(p);
  if (b.ws_bytes > 0) CHECK_CUDA(cudaMalloc(&b.ws, size_t(b.ws_bytes)));
  return nullptr;
}

// Median of CUDA-event samples of `run`, each after writing 2x L2 (cold cache).
inline double time_ms(const std::function<void()>& run, int samples) {
  int dev = 0, l2 = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  size_t flush_bytes = 2 * size_t(l2);
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) run();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    CHECK_CUDA(cudaEventRecord(e0));
    run();
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

}  // namespace cudnn_check
