// FlashAttention-2 backward (Dao 2023, Algorithm 2) on Ampere-class instructions:
// ldmatrix, mma.sync m16n8k16, cp.async. The launch enqueues
//
//   1. the pre-pass: D = rowsum(dO * O) and LSE * log2(e) into the workspace
//      (fa2_bwd_prep.cuh);
//   2. the main kernel, one CTA per (K/V block j, batch * K/V head):
//        load K_j, V_j once; dK = dV = 0                  (registers, whole CTA life)
//        for each query head of the K/V head's group, for each Q block i that sees
//        block j (causal: blocks above the diagonal skipped; cp.async, Stages deep):
//          S^T = K_j Q_i^T                                (each warp: 16 keys x all queries)
//          mask the causal diagonal / ragged key tail only
//          P^T = exp2(S^T * scale_log2 - LSE_i * log2e)   (from the saved LSE; -inf LSE: 0)
//          dP^T = V_j dO_i^T
//          dV += P^T dO_i                                 (P^T from registers)
//          dS^T = P^T * (dP^T - D_i)
//          dK += dS^T Q_i                                 (dS^T from registers)
//          dQ_i += dS K_j                                 (dS through shared memory)
//        dK *= scale; write dK, dV once
//   3. dQ: default, every CTA adds its dQ_i with float32 reductions (red.global.add.v4)
//      into a zeroed float32 accumulator and a conversion kernel rounds scale * dQ to
//      the dtype; with p.deterministic, the main kernel skips dQ and a Q-block-parallel
//      kernel recomputes S, dP and dS in a fixed order (fa2_bwd_dq.cuh).
//
// Why S^T: a warp that owns whole rows of S^T (keys) over every query of the block has
// P^T and dS^T as mma A fragments in its registers, exactly the operands of dV += P^T
// dO and dK += dS^T Q (reductions over queries), so only dS goes through shared memory,
// for dQ (a reduction over keys, which the warps split). Two barriers per Q block.
// The price: each warp's dK and dV for its 16 keys span the head dim in registers,
// 128 floats per thread at head dim 128; at 256 each CTA takes half of the head dim
// for dK, dV and dQ (DSplit = 2) and recomputes S^T and dP^T, which need all of it.
// The second layout (Fa2BwdTraits::kPInSmem, head dim 128 with 64-query blocks) sends
// P^T through shared memory too, so that two warps can share 32 keys, each with half
// of the head dim: more mma per ldmatrix, for one more shared tile.
//
// GQA / MQA: a K/V head's dK, dV sum over its query heads; the CTA loops over them,
// accumulating in registers (no partials, no extra pass; heads == heads_kv is one head).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/global_reduce.cuh"
#include "common/mask.cuh"
#include "common/mma_sm80.cuh"
#include "common/shape_checks.cuh"
#include "common/softmax.cuh"
#include "common/tile_store.cuh"
#include "common/warp_mma.cuh"
#include "fa2/fa2_bwd_dq.cuh"
#include "fa2/fa2_bwd_prep.cuh"
#include "fa2/fa2_bwd_workspace.cuh"

namespace fa {

// Calls f(mt, j, e, v[query]) for every element acc[mt][j][e] of S^T's fragments,
// with v a per-query vector in shared memory (LSE or D of the sub-step's queries):
// element e of n-tile j is query 8j + 2t + (e & 1), read as one float2 per n-tile.
template <int KeyTiles, int QueryTiles, typename F>
__device__ __forceinline__ void for_each_query(const float* v, int lane, F f) {
#pragma unroll
  for (int j = 0; j < QueryTiles; ++j) {
    const float2 x = *reinterpret_cast<const float2*>(v + 8 * j + 2 * (lane & 3));
#pragma unroll
    for (int mt = 0; mt < KeyTiles; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) f(mt, j, e, (e & 1) ? x.y : x.x);
  }
}

// BlockM: query rows per inner step; BlockN: keys per CTA; Stages: depth of the
// Q_i / dO_i pipeline.
//
// Two warp layouts (docs/FA2_BWD.md):
// - P^T in registers (kPInSmem false): each warp owns 16 * kKeyTiles keys, all of
//   the CTA's head-dim columns of their dK and dV, and S^T over every query of the
//   block; P^T and dS^T are the A operands of dV += P^T dO and dK += dS^T Q straight
//   from its registers.
// - P^T through shared memory (kPInSmem true): the warps form kKeyGroups groups of
//   32 keys and each group's two warps split the head dim of dK, dV (64 columns each
//   at 128) and the block's queries for S^T and dP^T; P^T and dS^T go to shared
//   memory and both warps of a group read them back over all queries. Twice the keys
//   per warp for the same 128 registers of dK and dV, so most K/V, Q and dO fragments
//   read from shared memory feed twice the mma: about a fifth fewer ldmatrix per
//   block GEMM, for a P^T tile of shared memory.
// P^T goes through shared memory at head dim 128 (32 keys' dK and dV over all 128
// columns would take 256 registers) with 16 keys per warp in the tile and room for
// the P^T tile; 128-query blocks have no such room. Head dim 64 reaches 32 keys per
// warp in registers instead (4-warp tiles, two CTAs per SM); head dim 256 keeps its
// CTA pairs.
template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa2BwdTraits {
  static constexpr int kThreads = Warps * 32;
  static constexpr int kDSplit = HeadDim > 128 ? HeadDim / 128 : 1;  // CTAs per K/V block
  static constexpr int kDCols = HeadDim / kDSplit;                    // dK/dV/dQ columns per CTA
  static constexpr int kQElems = BlockM * HeadDim;
  static constexpr int kKVElems = BlockN * HeadDim;
  // One stage: Q_i, dO_i, then BlockM floats of LSE*log2e and BlockM of D.
  static constexpr int kStageBytes = int(2 * kQElems * sizeof(Elem)) + 2 * BlockM * 4;
  static constexpr int kDsElems = BlockN * BlockM;  // dS^T (and P^T), keys x queries
  static constexpr int kSmemBytesPInRegs =
      int(2 * kKVElems * sizeof(Elem)) + Stages * kStageBytes + int(kDsElems * sizeof(Elem));
  static constexpr bool kPInSmem = kDSplit == 1 && kDCols >= 128 && BlockN == 16 * Warps &&
                                   kSmemBytesPInRegs + int(kDsElems * sizeof(Elem)) <= 227 * 1024;
  static constexpr int kWarpsD = kPInSmem ? 2 : 1;             // warps per key group
  static constexpr int kKeyGroups = Warps / kWarpsD;
  static constexpr int kKeyTiles = BlockN / (16 * kKeyGroups);  // 16-key m-tiles per warp
  static constexpr int kWarpQueries = BlockM / kWarpsD;         // queries of S^T per warp
  static constexpr int kWarpDCols = kDCols / kWarpsD;           // dK/dV columns per warp
  static constexpr int kDTiles = kWarpDCols / 8;                // n-tiles of dK, dV
  static constexpr int kSmemBytes = kSmemBytesPInRegs + (kPInSmem ? int(kDsElems * sizeof(Elem)) : 0);
  // Queries per sub-step of a Q block. One key tile: at head dim >= 128, S^T and dP^T
  // of 32 queries (16 registers each) next to dK and dV (128) leave the GEMMs room to
  // prefetch their operands; at 64, a 64-query sub-step fits. Two key tiles: 32
  // queries (S^T and dP^T 32 registers each, next to 128 of dK and dV).
  static constexpr int kSubM = kKeyTiles == 1 && HeadDim < 128 ? 64 : 32;
  static constexpr int kSubTiles = kSubM / 8;                   // n-tiles of S^T
  using DqTile = DqAccumTile<BlockM, HeadDim, kDSplit, Warps>;

  static_assert(Warps % kWarpsD == 0 && kKeyTiles >= 1 && BlockN == 16 * kKeyGroups * kKeyTiles,
                "warps own whole 16-key tiles");
  static_assert(kKeyTiles <= 2, "dK and dV of more than 32 keys per warp do not fit the registers");
  static_assert(kWarpQueries % kSubM == 0, "a warp's queries are whole sub-steps");
  static_assert(kWarpDCols % 16 == 0, "a warp's dK/dV columns are whole ldmatrix.x4 pairs");
  static_assert(BlockM % 64 == 0, "dS^T rows are swizzled 128-byte lines (>= 64 queries)");
  static_assert(Fa2BwdWorkspace::kRowAlign % BlockM == 0, "Q blocks must tile the padded rows");
  static_assert(HeadDim % 64 == 0 && kDCols % 16 == 0, "tiles are multiples of the mma shape");
  static_assert(2 * (BlockM / 4) <= kThreads, "one thread per 16 bytes of LSE and D");
  static_assert(Stages >= 2, "the Q/dO pipeline needs at least double buffering");
  static_assert(kSmemBytes <= 227 * 1024, "tile does not fit in shared memory");
};

// Rounds S^T-shaped fragments (keys from key0, queries from query0) to Elem into a
// swizzled keys x queries tile, Queries wide. Lanes 4g..4g+3 fill one 16-byte chunk of
// each of 8 rows, whose chunks the swizzle puts in 8 distinct bank groups.
template <typename Elem, int Queries, int KeyTiles, int QueryTiles>
__device__ __forceinline__ void store_transposed(Elem* tile, const float (&acc)[KeyTiles][QueryTiles][4],
                                                 int key0, int query0, int lane) {
#pragma unroll
  for (int mt = 0; mt < KeyTiles; ++mt)
#pragma unroll
    for (int j = 0; j < QueryTiles; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        *reinterpret_cast<uint32_t*>(
            tile + swizzle<Queries>(key0 + mt * 16 + (lane >> 2) + half * 8, query0 + 8 * j + 2 * (lane & 3))) =
            pack2<Elem>(acc[mt][j][2 * half], acc[mt][j][2 * half + 1]);
}

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages, bool kAtomicDq>
__global__ void __launch_bounds__(Warps * 32, 1)
    fa2_bwd_kernel(const AttnParams p, const Fa2BwdWorkspace ws) {
  using T = Fa2BwdTraits<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sK = reinterpret_cast<Elem*>(smem_raw);
  Elem* sV = sK + T::kKVElems;
  unsigned char* stages = reinterpret_cast<unsigned char*>(sV + T::kKVElems);
  Elem* sdS = reinterpret_cast<Elem*>(stages + Stages * T::kStageBytes);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // The d-parts of one K/V block are adjacent CTAs (they read the same tiles), and the
  // K/V blocks of one head run together (they share its Q, dO and dQ in L2). Under a
  // causal mask block 0 sees the most Q blocks: the longest CTAs start first.
  const int n_block = blockIdx.x / T::kDSplit, part = blockIdx.x % T::kDSplit;
  const int b = blockIdx.y / p.heads_kv, hk = blockIdx.y % p.heads_kv;
  const int group = p.heads / p.heads_kv;
  const int n0 = n_block * BlockN;
  const int keys_valid = min(BlockN, p.seqlen_k - n0);

  const KeyRange kr{p.seqlen_q, p.seqlen_k, p.causal};
  const int m_blocks = (p.seqlen_q + BlockM - 1) / BlockM;
  const int m_first = max(0, kr.query_begin(n0)) / BlockM;
  // Q blocks before m_unmasked hold a query that misses one of this block's keys (the
  // causal diagonal); a ragged key block masks its missing keys in every Q block.
  const int m_unmasked =
      keys_valid < BlockN ? m_blocks
                          : (max(0, kr.query_begin(n0 + BlockN - 1)) + BlockM - 1) / BlockM;
  const int n_m = m_blocks - m_first;  // >= 1: the last query row sees every key
  const int iters = group * n_m;

  auto stage_q = [&](int s) { return reinterpret_cast<Elem*>(stages + s * T::kStageBytes); };
  // The next stage to load: query head `load_h` of the group, Q block `load_m`.
  int load_h = 0, load_m = m_first;
  auto load_next = [&](int s) {
    const int h = hk * group + load_h;
    const int m0 = load_m * BlockM;
    const int rows = min(BlockM, p.seqlen_q - m0);
    Elem* sQ = stage_q(s);
    load_tile_async<BlockM, HeadDim, T::kThreads>(
        sQ, static_cast<const Elem*>(p.q) + b * p.q_batch_stride + m0 * p.q_row_stride + h * p.q_head_stride,
        p.q_row_stride, rows, tid);
    load_tile_async<BlockM, HeadDim, T::kThreads>(
        sQ + T::kQElems,
        static_cast<const Elem*>(p.dout) + b * p.do_batch_stride + m0 * p.do_row_stride + h * p.do_head_stride,
        p.do_row_stride, rows, tid);
    constexpr int kChunks = BlockM / 4;  // 16-byte chunks of one row vector
    if (tid < 2 * kChunks) {
      const float* src = (tid < kChunks ? ws.lse_log2 : ws.d) +
                         (int64_t(b) * p.heads + h) * ws.m_pad + m0 + (tid % kChunks) * 4;
      cp_async_16(smem_addr(reinterpret_cast<float*>(sQ + 2 * T::kQElems) + tid * 4), src, true);
    }
    if (++load_m == m_blocks) {
      load_m = m_first;
      ++load_h;
    }
  };

  // Prologue: K_j and V_j with the first stage, then Stages - 2 more in flight.
  load_kv_block_async<BlockN, HeadDim, T::kThreads>(
      sK, sV, static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride,
      static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride, p.k_row_stride,
      p.v_row_stride, n_block, p.seqlen_k, tid);
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < iters) load_next(s);
    cp_async_commit();
  }

  // This warp's keys (its key group's), its share of the queries for S^T and dP^T, and
  // its columns of dK and dV (all of the CTA's with P^T in registers).
  const int key_w0 = (T::kWarpsD == 1 ? warp : warp % T::kKeyGroups) * 16 * T::kKeyTiles;
  const int wd = T::kWarpsD == 1 ? 0 : warp / T::kKeyGroups;
  const int query_w0 = wd * T::kWarpQueries;
  // Per-lane ldmatrix bases (layouts in mma_sm80.cuh / warp_mma.cuh); a stage is a
  // constant byte offset from stage 0.
  const uint32_t k_a = q_lane_base<HeadDim>(sK, key_w0, lane);   // K rows as A of S^T
  const uint32_t v_a = q_lane_base<HeadDim>(sV, key_w0, lane);   // V rows as A of dP^T
  const uint32_t q_b = k_lane_base<HeadDim>(stage_q(0), lane);   // Q as B of S^T
  const uint32_t do_b = k_lane_base<HeadDim>(stage_q(0) + T::kQElems, lane);
  const uint32_t q_bt = v_lane_base<HeadDim>(stage_q(0), lane);  // Q as B of dK += dS^T Q
  const uint32_t do_bt = v_lane_base<HeadDim>(stage_q(0) + T::kQElems, lane);
  const int dp0 = (part * T::kDCols + wd * T::kWarpDCols) / 16;  // this warp's dK/dV columns, in 16s
  Elem* sPt = sdS + T::kDsElems;  // P^T, keys x queries (kPInSmem only)

  float acc_dk[T::kKeyTiles][T::kDTiles][4], acc_dv[T::kKeyTiles][T::kDTiles][4];
  zero(acc_dk);
  zero(acc_dv);

  int h = hk * group, m_block = m_first;  // this step's query head and Q block
  for (int it = 0; it < iters; ++it) {
    cp_async_wait<Stages - 2>();
    __syncthreads();  // stage `it` landed; every warp is done with the stage refilled next
                      // and with sdS
    {
      const int next = it + Stages - 1;
      if (next < iters) load_next(next % Stages);
      cp_async_commit();  // an empty group keeps the wait count uniform
    }
    const int s = it % Stages;
    // Queries in sub-steps of kSubM: S^T and dP^T of a sub-step are all a warp holds
    // besides dK and dV, which leaves registers for the GEMMs' operand prefetch.
#pragma unroll 1
    for (int sub = 0; sub < T::kWarpQueries / T::kSubM; ++sub) {
      const int q0 = query_w0 + sub * T::kSubM;                   // the sub-step's first query
      const uint32_t so = s * T::kStageBytes + q0 * HeadDim * 2;  // + rows of Q, dO
      const float* s_lse = reinterpret_cast<const float*>(stage_q(s) + 2 * T::kQElems) + q0;
      const float* s_d = s_lse + BlockM;

      float acc_s[T::kKeyTiles][T::kSubTiles][4];
      zero(acc_s);
      warp_qk<Elem, HeadDim>(acc_s, k_a, q_b + so);  // S^T = K Q^T
      if (m_block < m_unmasked)
        mask_scores_transposed(acc_s, kr, n0 + key_w0, m_block * BlockM + q0, lane);
      // P^T = exp2(S^T * scale_log2 - LSE * log2e)
      for_each_query<T::kKeyTiles, T::kSubTiles>(s_lse, lane, [&](int mt, int j, int e, float l) {
        acc_s[mt][j][e] = fast_exp2(fmaf(acc_s[mt][j][e], p.softmax_scale_log2, -l));
      });
      float acc_dp[T::kKeyTiles][T::kSubTiles][4];
      zero(acc_dp);
      warp_qk<Elem, HeadDim>(acc_dp, v_a, do_b + so);  // dP^T = V dO^T
      if constexpr (!T::kPInSmem) warp_pv<Elem, HeadDim>(acc_dv, acc_s, do_bt + so, dp0);  // dV += P^T dO
      // dS^T = P^T * (dP^T - D)
      for_each_query<T::kKeyTiles, T::kSubTiles>(s_d, lane, [&](int mt, int j, int e, float d) {
        acc_dp[mt][j][e] = acc_s[mt][j][e] * (acc_dp[mt][j][e] - d);
      });
      if constexpr (T::kPInSmem) {  // P^T and dS^T to shared memory for both warps of the group
        store_transposed<Elem, BlockM>(sPt, acc_s, key_w0, q0, lane);
        store_transposed<Elem, BlockM>(sdS, acc_dp, key_w0, q0, lane);
      } else {
        warp_pv<Elem, HeadDim>(acc_dk, acc_dp, q_bt + so, dp0);  // dK += dS^T Q
        if constexpr (kAtomicDq) store_transposed<Elem, BlockM>(sdS, acc_dp, key_w0, q0, lane);  // for dQ
      }
    }

    if constexpr (T::kPInSmem) {
      // dV += P^T dO and dK += dS^T Q over all of the block's queries, this warp's columns.
      __syncthreads();
      const uint32_t so = s * T::kStageBytes;
      warp_pv_smem<Elem, BlockM, HeadDim, T::kKeyTiles, T::kDTiles>(
          acc_dv, q_lane_base<BlockM>(sPt, key_w0, lane), do_bt + so, dp0);
      warp_pv_smem<Elem, BlockM, HeadDim, T::kKeyTiles, T::kDTiles>(
          acc_dk, q_lane_base<BlockM>(sdS, key_w0, lane), q_bt + so, dp0);
    }
    if constexpr (kAtomicDq) {
      // dQ_i += dS K_j over all of the block's keys, on the dQ tile's warp grid.
      if constexpr (!T::kPInSmem) __syncthreads();
      using L = typename T::DqTile;
      float acc_dq[L::kMTiles][L::kDTiles][4];
      zero(acc_dq);
      warp_gemm_at_b<Elem, BlockM, HeadDim, BlockN / 16>(
          acc_dq, at_lane_base<BlockM>(sdS, lane), L::row0(warp) / 16,
          v_lane_base<HeadDim>(sK, lane), L::col0(part, warp) / 16);
      float* tile = ws.dq_accum + ((int64_t(b) * p.heads + h) * ws.m_pad + m_block * BlockM) * HeadDim;
#pragma unroll
      for (int mt = 0; mt < L::kMTiles; ++mt)
#pragma unroll
        for (int dt = 0; dt < L::kDTiles; ++dt)
          red_add_f32x4(tile + L::frag_offset(part, warp, mt, dt, lane), acc_dq[mt][dt]);
    }
    if (++m_block == m_blocks) {
      m_block = m_first;
      ++h;
    }
  }

  // Epilogue: dK (scaled) and dV through shared memory (K's and V's tiles, free once
  // every warp is past its last dQ GEMM) for 16-byte coalesced stores.
  cp_async_wait<0>();
  __syncthreads();
  frags_to_smem<Elem, T::kDCols>(sK, acc_dk, key_w0, wd * T::kWarpDCols, p.softmax_scale, lane);
  frags_to_smem<Elem, T::kDCols>(sV, acc_dv, key_w0, wd * T::kWarpDCols, 1.f, lane);
  __syncthreads();
  const int col = part * T::kDCols;
  smem_tile_to_global<BlockN, T::kDCols, T::kThreads>(
      static_cast<Elem*>(p.dk) + b * p.dk_batch_stride + int64_t(n0) * p.dk_row_stride + hk * p.dk_head_stride + col,
      p.dk_row_stride, sK, keys_valid, tid);
  smem_tile_to_global<BlockN, T::kDCols, T::kThreads>(
      static_cast<Elem*>(p.dv) + b * p.dv_batch_stride + int64_t(n0) * p.dv_row_stride + hk * p.dv_head_stride + col,
      p.dv_row_stride, sV, keys_valid, tid);
}

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa2BwdKernel {
  using T = Fa2BwdTraits<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;

  static int64_t workspace_bytes(const AttnParams& p) { return Fa2BwdWorkspace::bytes(p); }

  static const char* unsupported(const AttnParams& p) {
    if (const char* why = tiled_backward_unsupported(p, elem_type_of<Elem>(), HeadDim)) return why;
    if (int64_t(p.batch) * p.heads > 65535) return "batch * heads above 65535 (grid y)";
    return nullptr;
  }

  static int launch(const AttnParams& p, cudaStream_t stream) {
    // The workspace's vectors are copied and reduced in 16-byte units.
    if (unsupported(p) != nullptr || p.workspace == nullptr || p.workspace_bytes < workspace_bytes(p) ||
        (reinterpret_cast<uintptr_t>(p.workspace) & 15) != 0)
      return int(cudaErrorInvalidValue);
    const Fa2BwdWorkspace ws = Fa2BwdWorkspace::carve(p);
    FA_CUDA_RETURN_IF_ERROR(cudaError_t(launch_bwd_prep<Elem, HeadDim>(p, ws, stream)));
    const dim3 grid((p.seqlen_k + BlockN - 1) / BlockN * T::kDSplit, p.batch * p.heads_kv);
    if (!p.deterministic) {
      FA_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(ws.dq_accum, 0, Fa2BwdWorkspace::dq_accum_bytes(p), stream));
      auto kernel = fa2_bwd_kernel<Elem, HeadDim, BlockM, BlockN, Warps, Stages, true>;
      FA_CUDA_RETURN_IF_ERROR(set_max_dynamic_smem(kernel, T::kSmemBytes));
      kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(p, ws);
      FA_CUDA_RETURN_LAUNCH_ERROR();
      return launch_bwd_dq_convert<Elem, HeadDim, BlockM, Warps, T::kDSplit>(p, ws, stream);
    }
    auto kernel = fa2_bwd_kernel<Elem, HeadDim, BlockM, BlockN, Warps, Stages, false>;
    FA_CUDA_RETURN_IF_ERROR(set_max_dynamic_smem(kernel, T::kSmemBytes));
    kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(p, ws);
    FA_CUDA_RETURN_LAUNCH_ERROR();
    return launch_bwd_dq<Elem, HeadDim>(p, ws, stream);
  }
};

}  // namespace fa
