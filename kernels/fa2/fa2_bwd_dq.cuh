// dQ of the FA2 backward in a fixed order, for deterministic mode: one CTA per Q block
// (grid over Q blocks x batch*heads), the forward's loop shape, no atomics:
//
//   load Q_i, dO_i, LSE_i*log2e, D_i                    (on chip for the whole row)
//   for each K/V block j the block sees:                (cp.async, Stages deep)
//     S = Q_i K_j^T; mask the causal diagonal / ragged tail only
//     P = exp2(S * scale_log2 - LSE*log2e)              (saved LSE: no max, no sum)
//     dP = dO_i V_j^T;  dS = P * (dP - D)
//     dQ += dS K_j                                      (dS stays in registers)
//   dQ_i = scale * dQ
//
// It recomputes S and dP, which the main kernel (then without its dQ GEMM) also
// computes: 7 block GEMMs instead of 5, the price of a fixed summation order.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/mask.cuh"
#include "common/mma_sm80.cuh"
#include "common/softmax.cuh"
#include "common/tile_store.cuh"
#include "common/warp_mma.cuh"
#include "fa2/fa2_bwd_workspace.cuh"

namespace fa {

template <typename Elem, int HeadDim>
struct Fa2BwdDqTraits {
  static constexpr int kWarps = 4, kThreads = kWarps * 32;
  static constexpr int kBlockM = 64;                       // 16 rows per warp
  static constexpr int kBlockN = HeadDim > 128 ? 32 : 64;  // dQ's registers grow with HeadDim
  static constexpr int kStages = 2;
  static constexpr int kNTiles = kBlockN / 8;
  static constexpr int kDTiles = HeadDim / 8;
  static constexpr int kQElems = kBlockM * HeadDim;
  static constexpr int kKVElems = kBlockN * HeadDim;
  static constexpr int kSmemBytes = int((2 * kQElems + 2 * kStages * kKVElems) * sizeof(Elem));
  static_assert(Fa2BwdWorkspace::kRowAlign % kBlockM == 0, "Q blocks must tile the padded rows");
};

template <typename Elem, int HeadDim>
__global__ void __launch_bounds__(Fa2BwdDqTraits<Elem, HeadDim>::kThreads)
    fa2_bwd_dq_kernel(const AttnParams p, const Fa2BwdWorkspace ws) {
  using T = Fa2BwdDqTraits<Elem, HeadDim>;
  constexpr int BlockM = T::kBlockM, BlockN = T::kBlockN, Stages = T::kStages;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);
  Elem* sdO = sQ + T::kQElems;
  Elem* sK = sdO + T::kQElems;
  Elem* sV = sK + Stages * T::kKVElems;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2;
  // Reversed, as the forward: under a causal mask the longest rows start first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int bh = blockIdx.y;
  const int b = bh / p.heads, h = bh % p.heads, hk = h / (p.heads / p.heads_kv);
  const int row0 = m_block * BlockM;
  const int rows_valid = min(BlockM, p.seqlen_q - row0);
  Elem* gdQ = static_cast<Elem*>(p.dq) + b * p.dq_batch_stride + row0 * p.dq_row_stride +
              h * p.dq_head_stride;

  const KeyRange kr{p.seqlen_q, p.seqlen_k, p.causal};
  const int n_end = kr.n_blocks<BlockN>(row0, BlockM);
  const int n_unmasked = kr.n_blocks_unmasked<BlockN>(row0);
  if (n_end <= 0) {  // no row of this block sees a key: dQ = 0
    for (int i = tid; i < rows_valid * HeadDim; i += T::kThreads)
      gdQ[(i / HeadDim) * p.dq_row_stride + i % HeadDim] = ElemTraits<Elem>::from_float(0.f);
    return;
  }

  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  auto load_kv = [&](int n, int stage) {
    load_kv_block_async<BlockN, HeadDim, T::kThreads>(sK + stage * T::kKVElems, sV + stage * T::kKVElems,
                                                      gK, gV, p.k_row_stride, p.v_row_stride, n,
                                                      p.seqlen_k, tid);
  };

  load_tile_async<BlockM, HeadDim, T::kThreads>(
      sQ, static_cast<const Elem*>(p.q) + b * p.q_batch_stride + row0 * p.q_row_stride + h * p.q_head_stride,
      p.q_row_stride, rows_valid, tid);
  load_tile_async<BlockM, HeadDim, T::kThreads>(
      sdO, static_cast<const Elem*>(p.dout) + b * p.do_batch_stride + row0 * p.do_row_stride + h * p.do_head_stride,
      p.do_row_stride, rows_valid, tid);
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < n_end) load_kv(s, s);
    cp_async_commit();
  }

  // This thread's two rows (g, g + 8 of its warp's 16): LSE*log2e and D.
  const int warp_row0 = warp * 16;
  float lse_log2[2], dsum[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int64_t i = int64_t(bh) * ws.m_pad + row0 + warp_row0 + g + half * 8;
    lse_log2[half] = ws.lse_log2[i];
    dsum[half] = ws.d[i];
  }

  float acc_dq[1][T::kDTiles][4];
  zero(acc_dq);
  const uint32_t q_base = q_lane_base<HeadDim>(sQ, warp_row0, lane);
  const uint32_t do_base = q_lane_base<HeadDim>(sdO, warp_row0, lane);
  const uint32_t k_base = k_lane_base<HeadDim>(sK, lane);   // K as B of S = Q K^T
  const uint32_t v_base = k_lane_base<HeadDim>(sV, lane);   // V as B of dP = dO V^T
  const uint32_t kt_base = v_lane_base<HeadDim>(sK, lane);  // K as B of dQ += dS K

  for (int n = 0; n < n_end; ++n) {
    cp_async_wait<Stages - 2>();
    __syncthreads();
    {
      const int next = n + Stages - 1;
      if (next < n_end) load_kv(next, next % Stages);
      cp_async_commit();
    }
    const uint32_t stage_off = (n % Stages) * T::kKVElems * 2;

    float acc_s[1][T::kNTiles][4];
    zero(acc_s);
    warp_qk<Elem, HeadDim>(acc_s, q_base, k_base + stage_off);  // S = Q K^T
    if (n >= n_unmasked) mask_scores(acc_s, kr, row0 + warp_row0, n * BlockN, lane);
    float acc_dp[1][T::kNTiles][4];
    zero(acc_dp);
    warp_qk<Elem, HeadDim>(acc_dp, do_base, v_base + stage_off);  // dP = dO V^T
#pragma unroll
    for (int nt = 0; nt < T::kNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float pr = fast_exp2(fmaf(acc_s[0][nt][e], p.softmax_scale_log2, -lse_log2[e >> 1]));
        acc_dp[0][nt][e] = pr * (acc_dp[0][nt][e] - dsum[e >> 1]);  // dS
      }
    warp_pv<Elem, HeadDim>(acc_dq, acc_dp, kt_base + stage_off);  // dQ += dS K
  }

  cp_async_wait<0>();
  __syncthreads();  // every warp is done with sQ: it stages dQ for 16-byte stores
  frags_to_smem<Elem, HeadDim>(sQ, acc_dq, warp_row0, 0, p.softmax_scale, lane);
  __syncthreads();
  smem_tile_to_global<BlockM, HeadDim, T::kThreads>(gdQ, p.dq_row_stride, sQ, rows_valid, tid);
}

template <typename Elem, int HeadDim>
int launch_bwd_dq(const AttnParams& p, const Fa2BwdWorkspace& ws, cudaStream_t stream) {
  using T = Fa2BwdDqTraits<Elem, HeadDim>;
  auto kernel = fa2_bwd_dq_kernel<Elem, HeadDim>;
  FA_CUDA_RETURN_IF_ERROR(set_max_dynamic_smem(kernel, T::kSmemBytes));
  dim3 grid((p.seqlen_q + T::kBlockM - 1) / T::kBlockM, p.batch * p.heads);
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(p, ws);
  return int(cudaGetLastError());
}

}  // namespace fa
