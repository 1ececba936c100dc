// The FA2 backward's two small passes around the main kernel:
//   before: D_i = rowsum(dO_i * O_i) and LSE_i * log2(e), per (batch, head, row), into
//           the workspace (Algorithm 2's pre-pass; the main kernel then reads two
//           floats per query row instead of dO and O again);
//   after:  dQ = softmax_scale * dq_accum, rounded to the dtype (the atomic path's
//           float32 sums, in the main kernel's fragment order, back to BSHD).
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"
#include "common/tile_store.cuh"
#include "fa2/fa2_bwd_workspace.cuh"

namespace fa {

constexpr int kBwdPrepThreads = 256;

// HeadDim / 8 lanes per row, each with 16 bytes of dO and O. Rows past seqlen_q (up
// to m_pad) get D = 0 and LSE*log2e = +inf, as do rows whose LSE is -inf (they saw
// no key): P = exp2(s - inf) = 0 there, so they add nothing to any gradient.
template <typename Elem, int HeadDim>
__global__ void __launch_bounds__(kBwdPrepThreads)
    fa2_bwd_prep_kernel(const AttnParams p, const Fa2BwdWorkspace ws) {
  constexpr int kLanesPerRow = HeadDim / 8;
  constexpr int kRowsPerCta = kBwdPrepThreads / kLanesPerRow;
  static_assert(kLanesPerRow <= 32 && 32 % kLanesPerRow == 0, "a row's lanes share a warp");
  const int tid = threadIdx.x;
  const int row = blockIdx.x * kRowsPerCta + tid / kLanesPerRow;
  const int bh = blockIdx.y, b = bh / p.heads, h = bh % p.heads;
  const bool valid = row < p.seqlen_q;
  float dot = 0.f;
  if (valid) {
    const int col = (tid % kLanesPerRow) * 8;
    const uint4 o = *reinterpret_cast<const uint4*>(
        static_cast<const Elem*>(p.o) + b * p.o_batch_stride + row * p.o_row_stride +
        h * p.o_head_stride + col);
    const uint4 g = *reinterpret_cast<const uint4*>(
        static_cast<const Elem*>(p.dout) + b * p.do_batch_stride + row * p.do_row_stride +
        h * p.do_head_stride + col);
    const Elem* oe = reinterpret_cast<const Elem*>(&o);
    const Elem* ge = reinterpret_cast<const Elem*>(&g);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      dot = fmaf(ElemTraits<Elem>::to_float(oe[i]), ElemTraits<Elem>::to_float(ge[i]), dot);
  }
#pragma unroll
  for (int off = kLanesPerRow / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffff, dot, off);
  if (row < ws.m_pad && tid % kLanesPerRow == 0) {
    const int64_t i = int64_t(bh) * ws.m_pad + row;
    const float lse = valid ? p.lse[int64_t(bh) * p.seqlen_q + row] : -INFINITY;
    ws.d[i] = valid ? dot : 0.f;
    ws.lse_log2[i] = lse == -INFINITY ? INFINITY : lse * 1.4426950408889634f;
  }
}

template <typename Elem, int HeadDim>
int launch_bwd_prep(const AttnParams& p, const Fa2BwdWorkspace& ws, cudaStream_t stream) {
  constexpr int kRowsPerCta = kBwdPrepThreads / (HeadDim / 8);
  dim3 grid((ws.m_pad + kRowsPerCta - 1) / kRowsPerCta, p.batch * p.heads);
  fa2_bwd_prep_kernel<Elem, HeadDim><<<grid, kBwdPrepThreads, 0, stream>>>(p, ws);
  return int(cudaGetLastError());
}

// One Q block per CTA, with the main kernel's thread count so each thread reads back
// the fragments its namesake added (float4 loads, 512 contiguous bytes per warp).
template <typename Elem, int HeadDim, int BlockM, int Warps, int DSplit>
__global__ void __launch_bounds__(Warps * 32)
    fa2_bwd_dq_convert_kernel(const AttnParams p, const Fa2BwdWorkspace ws) {
  using L = DqAccumTile<BlockM, HeadDim, DSplit, Warps>;
  __shared__ __align__(128) Elem sdq[BlockM * HeadDim];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m_block = blockIdx.x, bh = blockIdx.y, b = bh / p.heads, h = bh % p.heads;
  const float* tile = ws.dq_accum + (int64_t(bh) * ws.m_pad + m_block * BlockM) * HeadDim;
#pragma unroll
  for (int part = 0; part < DSplit; ++part) {
    float acc[L::kMTiles][L::kDTiles][4];
#pragma unroll
    for (int mt = 0; mt < L::kMTiles; ++mt)
#pragma unroll
      for (int dt = 0; dt < L::kDTiles; ++dt) {
        const float4 v =
            *reinterpret_cast<const float4*>(tile + L::frag_offset(part, warp, mt, dt, lane));
        acc[mt][dt][0] = v.x;
        acc[mt][dt][1] = v.y;
        acc[mt][dt][2] = v.z;
        acc[mt][dt][3] = v.w;
      }
    frags_to_smem<Elem, HeadDim>(sdq, acc, L::row0(warp), L::col0(part, warp), p.softmax_scale,
                                 lane);
  }
  __syncthreads();
  const int row0 = m_block * BlockM;
  smem_tile_to_global<BlockM, HeadDim, Warps * 32>(
      static_cast<Elem*>(p.dq) + b * p.dq_batch_stride + row0 * p.dq_row_stride +
          h * p.dq_head_stride,
      p.dq_row_stride, sdq, min(BlockM, p.seqlen_q - row0), tid);
}

template <typename Elem, int HeadDim, int BlockM, int Warps, int DSplit>
int launch_bwd_dq_convert(const AttnParams& p, const Fa2BwdWorkspace& ws, cudaStream_t stream) {
  dim3 grid((p.seqlen_q + BlockM - 1) / BlockM, p.batch * p.heads);
  fa2_bwd_dq_convert_kernel<Elem, HeadDim, BlockM, Warps, DSplit><<<grid, Warps * 32, 0, stream>>>(p, ws);
  return int(cudaGetLastError());
}

}  // namespace fa
