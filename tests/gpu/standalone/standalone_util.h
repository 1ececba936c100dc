// Helpers shared by the standalone GPU programs that stop at the first CUDA error
// (fa2_check, bwd_check, fp8_check, ring_check): the check itself, the problem shape,
// 16-bit rounding on the host, entry names, comma-separated filters, AttnParams, a
// growing workspace, and timing: device-made inputs, the L2 flush buffer, the
// timing loop and the FLOP convention.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/gpu_entry.h"
#include "common/mask.cuh"

// Prints file, line, call and CUDA's error text, and exits with 3.
#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(e_));                                                  \
      std::exit(3);                                                                          \
    }                                                                                        \
  } while (0)

namespace fa::standalone {

struct Shape {
  int batch, heads, heads_kv, seqlen_q, seqlen_k, head_dim;
  bool causal;
  ElemType dtype;
  float q_scale = 1.f;  // > 1: large-magnitude scores (online-softmax rescale, overflow)
  int head_pad = 0;     // > 0: tensors are views with this many extra head slots per row
};

// One past the last key that query `row` sees (causal: bottom-right aligned).
inline int key_end(const Shape& s, int row) {
  return KeyRange{s.seqlen_q, s.seqlen_k, s.causal}.key_end(row);
}

inline const char* dtype_name(ElemType t) { return t == ElemType::bf16 ? "bf16" : "fp16"; }

inline uint16_t to_bits(float x, ElemType t) {
  if (t == ElemType::bf16) {
    __nv_bfloat16 h = __float2bfloat16_rn(x);
    return *reinterpret_cast<uint16_t*>(&h);
  }
  __half h = __float2half_rn(x);
  return *reinterpret_cast<uint16_t*>(&h);
}
inline float from_bits(uint16_t b, ElemType t) {
  if (t == ElemType::bf16) return __bfloat162float(*reinterpret_cast<__nv_bfloat16*>(&b));
  return __half2float(*reinterpret_cast<__half*>(&b));
}
inline float round_to(float x, ElemType t) { return from_bits(to_bits(x, t), t); }

// family.dtype.hd<d>.<bm>x<bn>.w<warps>.s<stages>, as the registry names variants.
inline std::string entry_name(const GpuKernelEntry& e) {
  char buf[128];
  if (e.head_dim == 0)
    std::snprintf(buf, sizeof buf, "%s.%s", e.family, dtype_name(e.dtype));
  else
    std::snprintf(buf, sizeof buf, "%s.%s.hd%d.%dx%d.w%d.s%d", e.family, dtype_name(e.dtype),
                  e.head_dim, e.block_m, e.block_n, e.warps, e.stages);
  return buf;
}

// Whether `item` is one of the comma-separated `list` (an empty list holds everything).
inline bool in_list(const std::string& list, const std::string& item) {
  if (list.empty()) return true;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t c = list.find(',', pos);
    if (list.substr(pos, c == std::string::npos ? std::string::npos : c - pos) == item) return true;
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return false;
}

// AttnParams for one problem (softmax scale 1/sqrt(head_dim)); pointers, strides and
// the workspace are the caller's.
inline AttnParams problem_params(int batch, int heads, int heads_kv, int seqlen_q, int seqlen_k,
                                 int head_dim, bool causal, ElemType dtype) {
  AttnParams p;
  p.batch = batch;
  p.heads = heads;
  p.heads_kv = heads_kv;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.head_dim = head_dim;
  p.softmax_scale = 1.f / std::sqrt(float(head_dim));
  p.softmax_scale_log2 = p.softmax_scale * 1.4426950408889634f;
  p.causal = causal;
  p.dtype = dtype;
  return p;
}

// A device buffer that grows to the largest workspace asked of it.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() { cudaFree(ptr_); }
  // Points p.workspace at a buffer of at least `bytes`.
  void attach(AttnParams& p, int64_t bytes) {
    if (bytes > bytes_) {
      cudaFree(ptr_);
      ptr_ = nullptr;
      CHECK_CUDA(cudaMalloc(&ptr_, bytes));
      bytes_ = bytes;
    }
    p.workspace = ptr_;
    p.workspace_bytes = bytes_;
  }

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

// Element i of a seeded uniform(-1, 1) fill: splitmix64 of (i, seed). Timing
// inputs are made on the device with it (never zeros, which tensor cores run
// faster on; the distribution does not matter to a timing).
__device__ inline float uniform_pm1(size_t i, uint64_t seed) {
  uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(z >> 40) * (1.f / 16777216.f) * 2.f - 1.f;
}

// The buffer time_launches writes before each sample: twice device 0's L2, so
// no line of the previous sample's data survives it (docs/MEASUREMENT.md).
class L2Flush {
 public:
  L2Flush() {
    int l2 = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    bytes_ = size_t(l2) * 2;
    CHECK_CUDA(cudaMalloc(&ptr_, bytes_));
  }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  ~L2Flush() { cudaFree(ptr_); }
  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A forward's FLOPs by the FlashAttention convention (4 b h sq sk d, causal
// halved), and the TFLOP/s of `flops` done in `ms`.
inline double forward_flops(int batch, int heads, int seqlen_q, int seqlen_k, int head_dim, bool causal) {
  return 4.0 * batch * heads * double(seqlen_q) * seqlen_k * head_dim / (causal ? 2 : 1);
}
inline double tflops(double flops, double ms) { return flops / (ms * 1e-3) / 1e12; }

// Keeps the stream busy while the host records the start event and enqueues the
// launches under test, so host launch work never lands between the events.
static __global__ void hold_stream(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

struct Timing {
  double median_ms = -1, p10_ms = -1, p90_ms = -1;
  int samples = 0;  // 0: a launch failed
};

// Times launch(stream) (returns a cudaError_t as int): 3 warm-up runs, then samples
// until there are 10 and 300 ms of them (at most 100); before each, a memset of
// `flush_bytes` empties the L2 and a ~100 us spin holds the stream (docs/MEASUREMENT.md).
template <typename Launch>
Timing time_launches(Launch launch, void* flush, size_t flush_bytes) {
  int clock_khz = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const long long hold_cycles = (long long)clock_khz * 100 / 1000;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t t0, t1;
  CHECK_CUDA(cudaEventCreate(&t0));
  CHECK_CUDA(cudaEventCreate(&t1));
  bool failed = false;
  for (int i = 0; i < 3 && !failed; ++i) failed = launch(stream) != 0;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  double total = 0;
  while (!failed && (ms.size() < 10 || (ms.size() < 100 && total < 300.0))) {
    CHECK_CUDA(cudaMemsetAsync(flush, int(ms.size() & 0xff), flush_bytes, stream));
    hold_stream<<<1, 1, 0, stream>>>(hold_cycles);
    CHECK_CUDA(cudaEventRecord(t0, stream));
    failed = launch(stream) != 0;
    CHECK_CUDA(cudaEventRecord(t1, stream));
    CHECK_CUDA(cudaEventSynchronize(t1));
    float x = 0;
    CHECK_CUDA(cudaEventElapsedTime(&x, t0, t1));
    ms.push_back(x);
    total += x;
  }
  CHECK_CUDA(cudaGetLastError());
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(stream);
  Timing out;
  if (failed) return out;
  std::sort(ms.begin(), ms.end());
  auto q = [&](double f) { return ms[size_t(f * (ms.size() - 1))]; };
  out.median_ms = q(0.5);
  out.p10_ms = q(0.1);
  out.p90_ms = q(0.9);
  out.samples = int(ms.size());
  return out;
}

}  // namespace fa::standalone
