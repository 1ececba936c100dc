// Shared pieces of the CPU kernels: float32 views of AttnParams, the checks a
// run starts with, block visibility under causal masking, and byte counting.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fmt/format.h>
#include <limits>

#include "common/attn_params.h"
#include "core/errors.h"
#include "core/run_context.h"

namespace fa::cpu {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kStatBytes = 4;  // m, l, LSE: float32

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct View {
  const AttnParams& p;
  const float* q() const { return static_cast<const float*>(p.q); }
  const float* k() const { return static_cast<const float*>(p.k); }
  const float* v() const { return static_cast<const float*>(p.v); }
  float* o() const { return static_cast<float*>(p.o); }
  int kv_head(int h) const { return h / p.kv_group(); }
  const float* q_row(int b, int h, int64_t r) const {
    return q() + b * p.q_batch_stride + r * p.q_row_stride + h * p.q_head_stride;
  }
  const float* k_row(int b, int h, int64_t j) const {
    return k() + b * p.k_batch_stride + j * p.k_row_stride + kv_head(h) * p.k_head_stride;
  }
  const float* v_row(int b, int h, int64_t j) const {
    return v() + b * p.v_batch_stride + j * p.v_row_stride + kv_head(h) * p.v_head_stride;
  }
  float* o_row(int b, int h, int64_t r) const {
    return o() + b * p.o_batch_stride + r * p.o_row_stride + h * p.o_head_stride;
  }
  float& lse(int b, int h, int64_t r) const {
    return p.lse[(int64_t(b) * p.heads + h) * p.seqlen_q + r];
  }
  // Last key row r may see (bottom-right causal); seqlen_k - 1 without causal.
  int64_t last_key(int64_t r) const {
    return p.causal ? r + p.seqlen_k - p.seqlen_q : int64_t(p.seqlen_k) - 1;
  }
  // K/V blocks of width bn that Q rows [r0, r0 + rows) must visit.
  int64_t visible_blocks(int64_t r0, int64_t rows, int64_t bn) const {
    const int64_t last = last_key(r0 + rows - 1);
    if (last < 0) return 0;
    return std::min(ceil_div(p.seqlen_k, bn), last / bn + 1);
  }
};

// Validates what every CPU kernel needs; `name` goes into the message.
inline void check_params(const AttnParams& p, const char* name, int64_t workspace_needed) {
  if (p.dtype != ElemType::f32)
    throw KernelError(fmt::format("{}: CPU kernels take float32 buffers (params.dtype = {})", name,
                                  int(p.dtype)));
  if (!p.q || !p.k || !p.v || !p.o || !p.lse)
    throw KernelError(fmt::format("{}: null Q/K/V/O/LSE pointer", name));
  if (p.heads_kv <= 0 || p.heads % p.heads_kv != 0)
    throw KernelError(fmt::format("{}: heads {} not a multiple of heads_kv {}", name, p.heads,
                                  p.heads_kv));
  if (workspace_needed > 0 && (!p.workspace || p.workspace_bytes < workspace_needed))
    throw KernelError(fmt::format("{}: workspace of {} bytes given, {} needed", name,
                                  p.workspace_bytes, workspace_needed));
}

// Bytes moved, summed over tasks: each task counts locally and adds once.
struct ByteCount {
  std::atomic<int64_t> read{0}, write{0};
  void add(int64_t r, int64_t w) {
    read.fetch_add(r, std::memory_order_relaxed);
    write.fetch_add(w, std::memory_order_relaxed);
  }
  void report(RunContext& ctx) const {
    ctx.counted_read_bytes = read.load();
    ctx.counted_write_bytes = write.load();
  }
};

inline int64_t elem_bytes(const RunContext& ctx) { return ctx.elem_bytes > 0 ? ctx.elem_bytes : 4; }

// Eight independent partial sums: the compiler may vectorise them without
// -ffast-math (a single running sum fixes the order and stays scalar).
inline float dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int e = 0;
  for (; e + 8 <= n; e += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[e + k] * b[e + k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; e < n; ++e) s += a[e] * b[e];
  return s;
}

}  // namespace fa::cpu
