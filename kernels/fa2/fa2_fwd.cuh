// FlashAttention-2 forward (Dao 2023) on Ampere-class instructions: ldmatrix,
// mma.sync m16n8k16, cp.async. Reads as the paper's Algorithm 1 of FA2:
//
//   for each Q block i (one CTA; grid over Q blocks x batch*heads):
//     load Q_i; O = 0, m = -inf, l = 0                 (on chip for the whole row)
//     for each K/V block j the block sees:             (cp.async, Stages deep)
//       S = Q_i K_j^T                                  (warps split Q rows, share K_j)
//       mask S on the causal diagonal / ragged tail only
//       m_new = max(m, rowmax S); P = exp2(s*scale_log2 - m_new*scale_log2)
//       O = O * exp2(scale_log2 (m - m_new)) + P V_j   (P stays in registers)
//     O /= l; LSE = m*scale + log l                    (normalised once, at the end)
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/mask.cuh"
#include "common/mma_sm80.cuh"
#include "common/shape_checks.cuh"
#include "common/smem_limit.h"
#include "common/softmax.cuh"
#include "common/warp_mma.cuh"

namespace fa {

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa2Traits {
  static constexpr int kThreads = Warps * 32;
  static constexpr int kMTiles = BlockM / (16 * Warps);  // 16-row m-tiles per warp
  static constexpr int kNTiles = BlockN / 8;             // n-tiles of S
  static constexpr int kDTiles = HeadDim / 8;            // n-tiles of O
  static constexpr int kQElems = BlockM * HeadDim;
  static constexpr int kKVElems = BlockN * HeadDim;      // one K or V stage
  static constexpr int kSmemBytes = int((kQElems + 2 * Stages * kKVElems) * sizeof(Elem));
  static_assert(BlockM % (16 * Warps) == 0, "each warp owns whole 16-row m-tiles");
  static_assert(BlockN % 16 == 0 && HeadDim % 64 == 0, "tiles are multiples of the mma shape");
  static_assert(Stages >= 2, "the K/V pipeline needs at least double buffering");
  static_assert(kSmemBytes <= kSmemPerBlockMax, "tile does not fit in shared memory");
};

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
__global__ void __launch_bounds__(Warps * 32)
    fa2_fwd_kernel(const AttnParams p) {
  using T = Fa2Traits<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sK = sQ + T::kQElems;
  Elem* sV = sK + Stages * T::kKVElems;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Q blocks vary fastest: CTAs running together share one head's K/V, which then
  // stays in L2 (with batch*heads fastest, K/V of ~all resident heads streamed from
  // HBM for every Q block; changing this, with ex2.approx, gained 10-17% at hd128
  // non-causal: docs/PERF_NOTES.md fa2-grid-order). Reversed, so under a causal mask each head's
  // longest rows start first and the tail ends short.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int bh = blockIdx.y;
  const int b = bh / p.heads, h = bh % p.heads, hk = h / (p.heads / p.heads_kv);
  const int row0 = m_block * BlockM;
  const int rows_valid = min(BlockM, p.seqlen_q - row0);

  const Elem* gQ = static_cast<const Elem*>(p.q) + b * p.q_batch_stride + row0 * p.q_row_stride +
                   h * p.q_head_stride;
  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  Elem* gO = static_cast<Elem*>(p.o) + b * p.o_batch_stride + row0 * p.o_row_stride +
             h * p.o_head_stride;
  float* gLse = p.lse + int64_t(bh) * p.seqlen_q + row0;

  const KeyRange kr{p.seqlen_q, p.seqlen_k, p.causal};
  const int n_end = kr.n_blocks<BlockN>(row0, BlockM);
  const int n_unmasked = kr.n_blocks_unmasked<BlockN>(row0);

  if (n_end <= 0) {  // causal with seqlen_q > seqlen_k: no row of this block sees a key
    for (int i = tid; i < rows_valid * HeadDim; i += T::kThreads)
      gO[(i / HeadDim) * p.o_row_stride + i % HeadDim] = ElemTraits<Elem>::from_float(0.f);
    for (int i = tid; i < rows_valid; i += T::kThreads) gLse[i] = -INFINITY;
    return;
  }

  auto load_kv = [&](int n, int stage) {
    load_kv_block_async<BlockN, HeadDim, T::kThreads>(sK + stage * T::kKVElems, sV + stage * T::kKVElems,
                                                      gK, gV, p.k_row_stride, p.v_row_stride, n,
                                                      p.seqlen_k, tid);
  };

  // Prologue: Q with the first K/V block, then Stages - 2 more blocks in flight.
  load_tile_async<BlockM, HeadDim, T::kThreads>(sQ, gQ, p.q_row_stride, rows_valid, tid);
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < n_end) load_kv(s, s);
    cp_async_commit();
  }

  float acc_o[T::kMTiles][T::kDTiles][4];
  zero(acc_o);
  RowStats<T::kMTiles> stats;
  stats.init();

  const int warp_row0 = warp * 16 * T::kMTiles;  // this warp's first row in the block
  // Per-lane ldmatrix base addresses (fragment layouts in mma_sm80.cuh); every other
  // address is an XOR and an immediate offset from these.
  const uint32_t q_base = q_lane_base<HeadDim>(sQ, warp_row0, lane);
  const uint32_t k_base = k_lane_base<HeadDim>(sK, lane);
  const uint32_t v_base = v_lane_base<HeadDim>(sV, lane);

  for (int n = 0; n < n_end; ++n) {
    cp_async_wait<Stages - 2>();
    __syncthreads();  // block n landed for all threads; block n-1's stage is free
    {
      const int next = n + Stages - 1;
      if (next < n_end) load_kv(next, next % Stages);
      cp_async_commit();  // an empty group keeps the wait count uniform
    }
    const uint32_t stage_off = (n % Stages) * T::kKVElems * 2;
    const uint32_t k_stage = k_base + stage_off, v_stage = v_base + stage_off;

    float acc_s[T::kMTiles][T::kNTiles][4];
    zero(acc_s);
    warp_qk<Elem, HeadDim>(acc_s, q_base, k_stage);  // S = Q K^T

    // Only the causal diagonal and the ragged last block need a mask.
    if (n >= n_unmasked) mask_scores(acc_s, kr, row0 + warp_row0, n * BlockN, lane);
    softmax_rescale(acc_s, acc_o, stats, p.softmax_scale_log2);

    warp_pv<Elem, HeadDim>(acc_o, acc_s, v_stage);  // O += P V, P from registers
  }

  float lse[2 * T::kMTiles];
  softmax_finalize(acc_o, stats, p.softmax_scale, lse);

  // Epilogue: O through shared memory (the Q tile, now free) so global stores are
  // 16-byte and coalesced; LSE by the first thread of each quad.
  cp_async_wait<0>();
  __syncthreads();
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < T::kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = warp_row0 + mt * 16 + g + half * 8;
#pragma unroll
      for (int dt = 0; dt < T::kDTiles; ++dt)
        *reinterpret_cast<uint32_t*>(sQ + swizzle<HeadDim>(row, dt * 8 + 2 * t)) =
            pack2<Elem>(acc_o[mt][dt][2 * half], acc_o[mt][dt][2 * half + 1]);
      if (t == 0 && row < rows_valid) gLse[row] = lse[2 * mt + half];
    }
  }
  __syncthreads();
  constexpr int kChunksPerRow = HeadDim / 8;
#pragma unroll
  for (int i = 0; i < T::kQElems / 8 / T::kThreads; ++i) {
    const int idx = tid + i * T::kThreads;
    const int row = idx / kChunksPerRow, col = (idx % kChunksPerRow) * 8;
    if (row < rows_valid)
      *reinterpret_cast<uint4*>(gO + row * p.o_row_stride + col) =
          *reinterpret_cast<const uint4*>(sQ + swizzle<HeadDim>(row, col));
  }
}

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa2Kernel {
  using T = Fa2Traits<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
  static int64_t workspace_bytes(const AttnParams&) { return 0; }
  static const char* unsupported(const AttnParams& p) {
    if (int64_t(p.batch) * p.heads > 65535) return "batch * heads above 65535 (grid y)";
    return tiled_kernel_unsupported(p, elem_type_of<Elem>(), HeadDim);
  }
  static int launch(const AttnParams& p, cudaStream_t stream) {
    auto kernel = fa2_fwd_kernel<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
    FA_CUDA_RETURN_IF_ERROR(set_max_dynamic_smem(kernel, T::kSmemBytes));
    const int m_blocks = (p.seqlen_q + BlockM - 1) / BlockM;
    if (p.batch * p.heads > 65535) return int(cudaErrorInvalidConfiguration);
    dim3 grid(m_blocks, p.batch * p.heads);
    kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(p);
    return int(cudaGetLastError());
  }
};

}  // namespace fa
