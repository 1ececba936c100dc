// The two small kernels around the fa3 backward's main kernel:
//  - before: D = rowsum(dO o O) and LSE * log2(e) per query row, padded with
//    zeros to whole Q blocks, so the main kernel's producer fetches each Q
//    block's statistics as one aligned bulk copy;
//  - after: the float32 dQ accumulator, kept in the main kernel's fragment
//    order, times the softmax scale into dQ in the dtype.
// Plain CUDA (no sm_90a instruction); memory-bound, a few percent of the pass.
#pragma once
#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fa3/fa3_softmax.cuh"  // pack2

namespace fa::fa3 {

struct BwdPrepArgs {
  const void* o;
  const void* dout;
  const float* lse;  // [batch, heads, seqlen_q], natural log; -inf: the row sees no key
  float* lse_log2;   // [batch, heads, rows]
  float* dpsum;      // [batch, heads, rows]
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t do_batch_stride, do_row_stride, do_head_stride;
  int heads, seqlen_q, rows;  // rows = num_m_blocks * block_m >= seqlen_q
  int64_t total_rows;         // batch * heads * rows
};

// HeadDim / 8 lanes per row, each reading 16 bytes of O and of dO.
template <typename Elem, int HeadDim>
__global__ void fa3_bwd_prepare(const BwdPrepArgs a) {
  constexpr int kLanes = HeadDim / 8;
  const int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int i = int(r % a.rows);
  const int64_t bh = r / a.rows;
  const int h = int(bh % a.heads), b = int(bh / a.heads);
  const bool real = r < a.total_rows && i < a.seqlen_q;
  float dot = 0.f;
  if (real) {
    const Elem* o = static_cast<const Elem*>(a.o) + b * a.o_batch_stride + i * a.o_row_stride + h * a.o_head_stride;
    const Elem* d =
        static_cast<const Elem*>(a.dout) + b * a.do_batch_stride + i * a.do_row_stride + h * a.do_head_stride;
    const uint4 ov = reinterpret_cast<const uint4*>(o)[lane];
    const uint4 dv = reinterpret_cast<const uint4*>(d)[lane];
    const Elem* oe = reinterpret_cast<const Elem*>(&ov);
    const Elem* de = reinterpret_cast<const Elem*>(&dv);
#pragma unroll
    for (int e = 0; e < 8; ++e) dot = fmaf(float(oe[e]), float(de[e]), dot);
  }
#pragma unroll
  for (int off = kLanes / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
  if (r >= a.total_rows || lane != 0) return;
  float l2 = 0.f;
  if (real) {
    const float lse = a.lse[bh * a.seqlen_q + i];
    l2 = lse == -INFINITY ? INFINITY : lse * float(M_LOG2E);
  }
  a.dpsum[r] = dot;
  a.lse_log2[r] = l2;
}

struct BwdConvertArgs {
  const float* dq_accum;  // [batch, heads, num_m_blocks, task, 4096]
  void* dq;
  int64_t dq_batch_stride, dq_row_stride, dq_head_stride;
  int heads, seqlen_q, num_m_blocks;
  float softmax_scale;
  int64_t total_float4;
};

// One thread per float4 of the accumulator: thread tid's float4 k of a dQ task
// holds (rows g and g + 8 of warp w's 16) x (columns 8k + 2t, 8k + 2t + 1) of the
// task's 64 x 64 tile (lane = 4g + t), as store_dq_task wrote them.
template <typename Elem, int BlockM, int HeadDim>
__global__ void fa3_bwd_convert_dq(const BwdConvertArgs a) {
  constexpr int kTaskFloat4 = 64 * 64 / 4;
  constexpr int kBlockFloat4 = BlockM * HeadDim / 4;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= a.total_float4) return;
  const int64_t blk = idx / kBlockFloat4;
  const int within = int(idx % kBlockFloat4);
  const int task = within / kTaskFloat4, f = within % kTaskFloat4;
  const int k = f / 128, tid = f % 128;
  const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
  const int mc = task / (HeadDim / 64), nc = task % (HeadDim / 64);
  const int m = int(blk % a.num_m_blocks);
  const int64_t bh = blk / a.num_m_blocks;
  const int h = int(bh % a.heads), b = int(bh / a.heads);
  const float4 v = reinterpret_cast<const float4*>(a.dq_accum)[idx];
  const int row0 = m * BlockM + mc * 64 + 16 * w + g;
  const int col = nc * 64 + 8 * k + 2 * t;
  Elem* base = static_cast<Elem*>(a.dq) + b * a.dq_batch_stride + h * a.dq_head_stride + col;
  if (row0 < a.seqlen_q)
    *reinterpret_cast<uint32_t*>(base + int64_t(row0) * a.dq_row_stride) =
        pack2<Elem>(v.x * a.softmax_scale, v.y * a.softmax_scale);
  if (row0 + 8 < a.seqlen_q)
    *reinterpret_cast<uint32_t*>(base + int64_t(row0 + 8) * a.dq_row_stride) =
        pack2<Elem>(v.z * a.softmax_scale, v.w * a.softmax_scale);
}

}  // namespace fa::fa3
