// FlashAttention (Dao et al. 2022) forward, the paper's Algorithm 1, with the
// same warp-level tensor-core GEMMs as fa2 (mma.sync m16n8k16):
//
//   one CTA per (batch, head, split); O (float32), l, m live in HBM (p.workspace),
//   initialised there to 0, 0, -inf
//   for each K/V block j:                      (outer loop; K_j, V_j kept in smem)
//     for each of the split's Q blocks i that sees block j:
//                                              (inner loop; Q_i double-buffered)
//       load Q_i, O_i, l_i, m_i from HBM
//       S = Q_i K_j^T; m~ = rowmax S; P~ = exp(S - m~); l~ = rowsum P~
//       m_new = max(m_i, m~); l_new = e^(m_i - m_new) l_i + e^(m~ - m_new) l~
//       O_i = (l_i e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j) / l_new
//       write O_i, l_new, m_new to HBM; at block i's last visible j, that write is
//       the output itself: O_i in the problem's dtype and LSE_i = m_i + log l_i
//   rows that see no key at all (causal, seqlen_q > seqlen_k): O = 0, LSE = -inf.
//
// Warps: one per 16-row m-tile; a tile with more warps than m-tiles (64x128.w8 at
// hd256) gives each row group kWarpsN warps, each computing a slice of S's columns
// and of O's head dim, with the softmax's row max and sum exchanged and P passed
// through shared memory. That keeps the float32 O block and the S block out of one
// warp's registers, so B_c can be 128 at hd256: Algorithm 1's O round trip costs
// 8*d bytes per row per K/V block, so B_c sets FA1's HBM traffic. Where shared
// memory allows (kPrefetchO), those tiles also load the split's next O_i, l_i, m_i
// into shared memory with cp.async while the current block computes, so the round
// trip's read is not waited for between blocks.
//
// Buffering: the next block's Q_i (and O_i) load while a block computes, across
// outer steps too (the last block of step j loads step j+1's first, unless it is
// itself); K_j and V_j load at the start of step j, V_j in its own copy group that
// only the first block's P V waits for. There is no room for a second K/V block.
//
// Causal: (i, j) pairs with no visible key are skipped. The split (common/fa1_split.h)
// deals a head's Q blocks to several CTAs when batch*heads cannot fill the GPU, as
// flash-attention v1 did; each CTA still runs Algorithm 1's loop order and O/l/m
// HBM round trips. FA2's change is the loop order itself, not this.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/fa1_split.h"
#include "common/mask.cuh"
#include "common/mma_sm80.cuh"
#include "common/named_barrier.cuh"
#include "common/shape_checks.cuh"
#include "common/smem_limit.h"
#include "common/softmax.cuh"
#include "common/warp_mma.cuh"

// FA1_PREFETCH_O=0 turns the O_i prefetch off (an ablation switch; PERF_NOTES fa1-o-prefetch).
#ifndef FA1_PREFETCH_O
#define FA1_PREFETCH_O 1
#endif

namespace fa {

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps>
struct Fa1Traits {
  static constexpr int kThreads = Warps * 32;
  // Row groups of 16*kMTiles rows; kWarpsN warps share one when Warps > BlockM/16.
  static constexpr int kWarpsM = Warps < BlockM / 16 ? Warps : BlockM / 16;
  static constexpr int kWarpsN = Warps / kWarpsM;
  static constexpr bool kSplitCols = kWarpsN > 1;
  static constexpr int kMTiles = BlockM / (16 * kWarpsM);
  static constexpr int kSCols = BlockN / kWarpsN;   // S columns (keys) per warp
  static constexpr int kOCols = HeadDim / kWarpsN;  // O columns (head dim) per warp
  static constexpr int kNTiles = kSCols / 8;
  static constexpr int kDTiles = kOCols / 8;
  static constexpr int kQElems = BlockM * HeadDim;
  static constexpr int kKVElems = BlockN * HeadDim;
  static constexpr int kPElems = kSplitCols ? BlockM * BlockN : 0;
  static constexpr int kRedFloats = kSplitCols ? 2 * kWarpsN * BlockM : 0;  // row max, row sum
  // K_j, V_j, two Q_i buffers (the next Q block loads while this one computes);
  // with split columns also P and the row-reduction slots; with kPrefetchO, the
  // next O_i (float32) and its m_i, l_i.
  static constexpr int kBaseBytes =
      int((2 * kQElems + 2 * kKVElems + kPElems) * sizeof(Elem) + kRedFloats * sizeof(float));
  static constexpr int kOStageBytes = int((BlockM * HeadDim + 2 * BlockM) * sizeof(float));
  static constexpr bool kPrefetchO =
      FA1_PREFETCH_O && kSplitCols && kBaseBytes + kOStageBytes <= kSmemPerBlockMax;
  static constexpr int kSmemBytes = kBaseBytes + (kPrefetchO ? kOStageBytes : 0);
  static_assert(BlockM % (16 * kWarpsM) == 0 && Warps % kWarpsM == 0,
                "each warp owns whole 16-row m-tiles");
  static_assert(BlockN % 16 == 0 && HeadDim % 64 == 0, "tiles are multiples of the mma shape");
  static_assert(!kSplitCols || (kSCols % 16 == 0 && kOCols % 16 == 0 && BlockN % 64 == 0),
                "split warps need 16-key S slices and 16-column O slices");
  static_assert(kWarpsM < 16, "one named barrier per row group");
  static_assert(kSmemBytes <= kSmemPerBlockMax, "tile does not fit in shared memory");
};

// Workspace: O float32 [batch*heads, seqlen_q, head_dim], then m and l [batch*heads, seqlen_q].
inline int64_t fa1_workspace_bytes(const AttnParams& p) {
  return int64_t(p.batch) * p.heads * p.seqlen_q * (p.head_dim + 2) * int64_t(sizeof(float));
}

// Float index of O_i's element (r, col) in the kPrefetchO stage: 16-byte chunks
// permuted within each 128 bytes by row, so a warp's float2 reads of rows g, g+8
// (columns 2t, 2t+1 of 8-column tiles) hit 32 distinct banks per half-warp.
template <int HeadDim>
__device__ __forceinline__ int o_slot(int r, int col) {
  const int chunk = col >> 2;
  return r * HeadDim + (((chunk & ~7) | ((chunk ^ ((r & 3) << 1)) & 7)) << 2) + (col & 3);
}

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps>
__global__ void __launch_bounds__(Warps * 32) fa1_fwd_kernel(const AttnParams p) {
  using T = Fa1Traits<Elem, HeadDim, BlockM, BlockN, Warps>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sK = reinterpret_cast<Elem*>(smem_raw);
  Elem* sV = sK + T::kKVElems;
  Elem* sQ = sV + T::kKVElems;      // two buffers
  Elem* sP = sQ + 2 * T::kQElems;   // split columns: P of the whole block
  float* sMax = reinterpret_cast<float*>(sP + T::kPElems);  // [kWarpsN][BlockM]
  float* sSum = sMax + T::kRedFloats / 2;                    // [kWarpsN][BlockM]
  float* sO = sSum + T::kRedFloats / 2;  // kPrefetchO: O_i [BlockM][HeadDim], swizzled (o_slot)
  float* sML = sO + BlockM * HeadDim;    // kPrefetchO: m_i [BlockM], then l_i [BlockM]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int bh = blockIdx.x;
  const int split = blockIdx.y, splits = gridDim.y;  // this CTA's Q blocks: split + k * splits
  const int b = bh / p.heads, h = bh % p.heads, hk = h / (p.heads / p.heads_kv);
  const int sq = p.seqlen_q, sk = p.seqlen_k;

  const Elem* gQ = static_cast<const Elem*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  Elem* gO = static_cast<Elem*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  float* wO = static_cast<float*>(p.workspace) + int64_t(bh) * sq * HeadDim;
  float* wM = static_cast<float*>(p.workspace) + int64_t(p.batch) * p.heads * sq * HeadDim +
              int64_t(bh) * sq;
  float* wL = wM + int64_t(p.batch) * p.heads * sq;
  float* gLse = p.lse + int64_t(bh) * sq;

  const KeyRange kr{sq, sk, p.causal};
  const int m_blocks = (sq + BlockM - 1) / BlockM;
  const int n_blocks = (sk + BlockN - 1) / BlockN;
  const int wm = warp % T::kWarpsM, wn = warp / T::kWarpsM;  // row group, column slice
  const int warp_row0 = wm * 16 * T::kMTiles;
  const int s_col0 = wn * T::kSCols, o_col0 = wn * T::kOCols;  // this warp's S and O columns
  const uint32_t k_base = k_lane_base<HeadDim>(sK, lane) + s_col0 * HeadDim * 2;
  const uint32_t v_base = v_lane_base<HeadDim>(sV, lane);
  const uint32_t q_base = q_lane_base<HeadDim>(sQ, warp_row0, lane);
  // The warps of one row group meet at named barrier 1 + wm.
  auto row_group_sync = [&] { named_barrier_sync(1 + wm, 32 * T::kWarpsN); };

  auto load_q = [&](int i, int buf) {
    load_tile_async<BlockM, HeadDim, T::kThreads>(sQ + buf * T::kQElems,
                                                  gQ + int64_t(i) * BlockM * p.q_row_stride,
                                                  p.q_row_stride, sq - i * BlockM, tid);
  };
  // kPrefetchO: O_i, m_i, l_i into shared memory (rows >= seqlen_q read as 0; never stored).
  // Each thread copies one 16-byte column of chunks, every kORowStep-th row: a trip count
  // known at compile time and a swizzle that is the same on every row it copies
  // (o_slot depends on the row only through r & 3, and kORowStep is a multiple of 4).
  constexpr int kOChunksPerRow = HeadDim / 4;
  constexpr int kORowStep = T::kThreads / kOChunksPerRow;
  static_assert(T::kThreads % kOChunksPerRow == 0 && BlockM % kORowStep == 0 && kORowStep % 4 == 0,
                "the O_i copy gives each thread whole rows' chunks");
  const int o_row0 = tid / kOChunksPerRow, o_col = (tid % kOChunksPerRow) * 4;
  auto load_o = [&](int i) {
    const float* src = wO + (int64_t(i) * BlockM + o_row0) * HeadDim + o_col;
    const int rows_left = sq - i * BlockM - o_row0;  // this thread's rows below it are valid
#pragma unroll
    for (int k = 0; k < BlockM / kORowStep; ++k) {
      const bool valid = k * kORowStep < rows_left;
      cp_async_16(smem_addr(sO + o_slot<HeadDim>(o_row0 + k * kORowStep, o_col)),
                  valid ? src + k * kORowStep * HeadDim : wO, valid);
    }
    // m_i then l_i: one 4-byte copy per thread (every tile has 2 * BlockM <= threads).
    static_assert(2 * BlockM <= T::kThreads, "one m_i or l_i element per thread");
    if (tid < 2 * BlockM) {
      const int r = tid % BlockM;
      const bool valid = i * BlockM + r < sq;
      const float* stat = (tid < BlockM ? wM : wL) + i * BlockM + r;
      cp_async_4(smem_addr(sML + tid), valid ? stat : wM, valid);
    }
  };
  // This split's first Q block that sees key j*BlockN (causal: rows before the
  // diagonal see none of block j).
  auto first_q_block = [&](int j) {
    int first = 0;
    if (p.causal) {
      const int first_row = j * BlockN - (sk - sq);  // key_end(row) > j*BlockN from here on
      first = first_row <= 0 ? 0 : first_row / BlockM;
    }
    return first + ((split - first) % splits + splits) % splits;  // round up to this split's blocks
  };
  // Rows of this split, block by block: [i*BlockM, min((i+1)*BlockM, sq)).
  auto for_own_rows = [&](auto&& f) {
    for (int i = split; i < m_blocks; i += splits) {
      const int r_end = min((i + 1) * BlockM, sq);
      f(i * BlockM, r_end);
    }
  };

  // Line 2 of Algorithm 1: O = 0, l = 0, m = -inf in HBM (the traffic model in
  // docs/MEASUREMENT.md counts this write and the reads of it at j = 0).
  for_own_rows([&](int r0, int r_end) {
    for (int idx = r0 * (HeadDim / 4) + tid; idx < r_end * (HeadDim / 4); idx += T::kThreads)
      reinterpret_cast<float4*>(wO)[idx] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int row = r0 + tid; row < r_end; row += T::kThreads) {
      wM[row] = -INFINITY;
      wL[row] = 0.f;
    }
  });
  // (The __syncthreads at the top of the loop makes these writes visible.)

  int qbuf = 0;               // the Q buffer of the next block to run
  bool next_loaded = false;   // the next outer step's first Q_i (O_i) is already on its way
  for (int j = 0; j < n_blocks; ++j) {
    const int i_begin = first_q_block(j);
    if (i_begin >= m_blocks) break;  // (causal) none of this split's rows sees block j or later
    __syncthreads();  // everyone is done with K_{j-1}, V_{j-1} and both Q buffers
    // Two copy groups: K_j (with the first Q_i and O_i unless the previous outer
    // step's last block prefetched them), then V_j, which the first block waits for
    // only before its P V. The K/V load is the one FA1 cannot prefetch: no room for
    // a second K/V block in shared memory.
    load_tile_async<BlockN, HeadDim, T::kThreads>(sK, gK + int64_t(j) * BlockN * p.k_row_stride,
                                                  p.k_row_stride, sk - j * BlockN, tid);
    if (!next_loaded) {
      load_q(i_begin, qbuf);
      if constexpr (T::kPrefetchO) load_o(i_begin);
    }
    next_loaded = false;
    cp_async_commit();
    load_tile_async<BlockN, HeadDim, T::kThreads>(sV, gV + int64_t(j) * BlockN * p.v_row_stride,
                                                  p.v_row_stride, sk - j * BlockN, tid);
    cp_async_commit();
    // Block j needs a mask on its ragged tail, or where some row of a Q block does not see all of it.
    const bool tail = (j + 1) * BlockN > sk;

    for (int i = i_begin; i < m_blocks; i += splits) {
      const int buf = qbuf;
      qbuf ^= 1;
      const bool first = i == i_begin;
      if (first)
        cp_async_wait<1>();  // K_j, Q_i (O_i); V_j may still be on its way
      else
        cp_async_wait<0>();
      __syncthreads();  // Q_i (and O_i) landed; every warp is done with the previous Q buffer

      // Load O_i, m_i, l_i from HBM (kPrefetchO: from the copy that has landed).
      float acc_o[T::kMTiles][T::kDTiles][4];
      float m_old[2 * T::kMTiles], l_old[2 * T::kMTiles];
#pragma unroll
      for (int mt = 0; mt < T::kMTiles; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r_local = warp_row0 + mt * 16 + g + half * 8, row = i * BlockM + r_local;
          const bool in = row < sq;
          if constexpr (T::kPrefetchO) {
            m_old[2 * mt + half] = sML[r_local];
            l_old[2 * mt + half] = sML[BlockM + r_local];
          } else {
            m_old[2 * mt + half] = in ? wM[row] : -INFINITY;
            l_old[2 * mt + half] = in ? wL[row] : 0.f;
          }
#pragma unroll
          for (int dt = 0; dt < T::kDTiles; ++dt) {
            const int col = o_col0 + dt * 8 + 2 * t;
            float2 v;
            if constexpr (T::kPrefetchO)
              v = *reinterpret_cast<const float2*>(sO + o_slot<HeadDim>(r_local, col));
            else
              v = in ? *reinterpret_cast<const float2*>(wO + int64_t(row) * HeadDim + col)
                     : make_float2(0.f, 0.f);
            acc_o[mt][dt][2 * half] = v.x;
            acc_o[mt][dt][2 * half + 1] = v.y;
          }
        }
      }
      if constexpr (T::kPrefetchO) __syncthreads();  // every warp has its O_i: the stage is free
      // The next block's Q_i (O_i): this outer step's next, or after its last, the next
      // outer step's first -- unless that is this block, whose O_i is written below
      // (any other was written at an earlier step of this outer step, before the
      // barrier above).
      int next = i + splits;
      if (next >= m_blocks && j + 1 < n_blocks) {
        next = first_q_block(j + 1);
        if (next == i) next = m_blocks;
        next_loaded = next < m_blocks;
      }
      if (next < m_blocks) {
        load_q(next, qbuf);
        if constexpr (T::kPrefetchO) load_o(next);
      }
      cp_async_commit();

      float acc_s[T::kMTiles][T::kNTiles][4];
      zero(acc_s);
      warp_qk<Elem, HeadDim>(acc_s, q_base + buf * T::kQElems * 2, k_base);  // S = Q_i K_j^T
      const int row0 = i * BlockM + warp_row0;
      if (tail || (p.causal && kr.key_end(row0) < (j + 1) * BlockN))
        mask_scores(acc_s, kr, row0, j * BlockN + s_col0, lane);

      // Row max of S_ij (m~), over the row group's warps when they split the columns.
      float mx[2 * T::kMTiles];
#pragma unroll
      for (int mt = 0; mt < T::kMTiles; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float v = -INFINITY;
#pragma unroll
          for (int nt = 0; nt < T::kNTiles; ++nt)
            v = fmaxf(v, fmaxf(acc_s[mt][nt][2 * half], acc_s[mt][nt][2 * half + 1]));
          mx[2 * mt + half] = quad_max(v);
        }
      }
      if constexpr (T::kSplitCols) {
        if (t == 0) {
#pragma unroll
          for (int r = 0; r < 2 * T::kMTiles; ++r)
            sMax[wn * BlockM + warp_row0 + (r / 2) * 16 + (r % 2) * 8 + g] = mx[r];
        }
        row_group_sync();
#pragma unroll
        for (int r = 0; r < 2 * T::kMTiles; ++r) {
#pragma unroll
          for (int w = 0; w < T::kWarpsN; ++w)
            mx[r] = fmaxf(mx[r], sMax[w * BlockM + warp_row0 + (r / 2) * 16 + (r % 2) * 8 + g]);
        }
      }

      // The paper's update, in exp2 with the scale folded in. O_i is kept
      // normalised in HBM, so it is scaled back by l_i before P~ V_j is added.
      float old_weight[2 * T::kMTiles], row_sum[2 * T::kMTiles];
#pragma unroll
      for (int mt = 0; mt < T::kMTiles; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = 2 * mt + half;
          const float m_new = fmaxf(mx[r], m_old[r]);
          const float offset = safe_offset(m_new, p.softmax_scale_log2);
          float sum = 0.f;
#pragma unroll
          for (int nt = 0; nt < T::kNTiles; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float pv = fast_exp2(fmaf(acc_s[mt][nt][2 * half + e], p.softmax_scale_log2, -offset));
              acc_s[mt][nt][2 * half + e] = pv;
              sum += pv;
            }
          }
          // l_i e^(m_i - m_new); m_i = -inf (nothing seen yet) gives exp2(-inf) = 0,
          // never 0 * inf.
          old_weight[r] = l_old[r] * fast_exp2(m_old[r] * p.softmax_scale_log2 - offset);
          row_sum[r] = quad_sum(sum);
#pragma unroll
          for (int dt = 0; dt < T::kDTiles; ++dt) {
            acc_o[mt][dt][2 * half] *= old_weight[r];
            acc_o[mt][dt][2 * half + 1] *= old_weight[r];
          }
          m_old[r] = m_new;
        }
      }

      if constexpr (T::kSplitCols) {
        // Publish this warp's P~ slice and partial row sums; PV needs all of P's columns.
#pragma unroll
        for (int mt = 0; mt < T::kMTiles; ++mt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int row = warp_row0 + mt * 16 + half * 8 + g;
            if (t == 0) sSum[wn * BlockM + row] = row_sum[2 * mt + half];
#pragma unroll
            for (int nt = 0; nt < T::kNTiles; ++nt)
              *reinterpret_cast<uint32_t*>(sP + swizzle<BlockN>(row, s_col0 + nt * 8 + 2 * t)) =
                  pack2<Elem>(acc_s[mt][nt][2 * half], acc_s[mt][nt][2 * half + 1]);
          }
        }
        row_group_sync();
#pragma unroll
        for (int r = 0; r < 2 * T::kMTiles; ++r) {
          row_sum[r] = 0.f;
#pragma unroll
          for (int w = 0; w < T::kWarpsN; ++w)
            row_sum[r] += sSum[w * BlockM + warp_row0 + (r / 2) * 16 + (r % 2) * 8 + g];
        }
      }
      float inv_l_new[2 * T::kMTiles];
#pragma unroll
      for (int r = 0; r < 2 * T::kMTiles; ++r) {
        const float l_new = old_weight[r] + row_sum[r];
        inv_l_new[r] = l_new > 0.f ? 1.f / l_new : 0.f;
        l_old[r] = l_new;
      }

      if (first) {  // V_j: the groups after it are the next Q_i (O_i) only
        cp_async_wait<1>();
        __syncthreads();
      }
      // O_i += P~ V_j
      if constexpr (T::kSplitCols)
        warp_pv_smem<Elem, BlockN, HeadDim>(acc_o, q_lane_base<BlockN>(sP, warp_row0, lane), v_base,
                                            o_col0 / 16);
      else
        warp_pv<Elem, HeadDim>(acc_o, acc_s, v_base);

      // Write O_i (normalised), m, l back to HBM; after block i's last visible K/V
      // block, O_i in the dtype and LSE_i instead (a row of block i that sees no key
      // has l = 0: O = 0, LSE = -inf).
      const bool last = j == kr.n_blocks<BlockN>(i * BlockM, BlockM) - 1;
#pragma unroll
      for (int mt = 0; mt < T::kMTiles; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = 2 * mt + half;
          const int row = i * BlockM + warp_row0 + mt * 16 + g + half * 8;
          if (row >= sq) continue;
          if (last) {
            if (t == 0 && wn == 0)
              gLse[row] = l_old[r] > 0.f ? m_old[r] * p.softmax_scale + logf(l_old[r]) : -INFINITY;
#pragma unroll
            for (int dt = 0; dt < T::kDTiles; ++dt)
              *reinterpret_cast<uint32_t*>(gO + int64_t(row) * p.o_row_stride + o_col0 + dt * 8 + 2 * t) =
                  pack2<Elem>(acc_o[mt][dt][2 * half] * inv_l_new[r],
                              acc_o[mt][dt][2 * half + 1] * inv_l_new[r]);
            continue;
          }
          if (t == 0 && wn == 0) {
            wM[row] = m_old[r];
            wL[row] = l_old[r];
          }
#pragma unroll
          for (int dt = 0; dt < T::kDTiles; ++dt)
            *reinterpret_cast<float2*>(wO + int64_t(row) * HeadDim + o_col0 + dt * 8 + 2 * t) =
                make_float2(acc_o[mt][dt][2 * half] * inv_l_new[r],
                            acc_o[mt][dt][2 * half + 1] * inv_l_new[r]);
        }
      }
    }
  }

  // Q blocks that see no key at all (causal, seqlen_q > seqlen_k) are never visited:
  // O = 0, LSE = -inf.
  for_own_rows([&](int r0, int r_end) {
    if (kr.n_blocks<BlockN>(r0, r_end - r0) > 0) return;
    for (int idx = r0 * (HeadDim / 4) + tid; idx < r_end * (HeadDim / 4); idx += T::kThreads) {
      const int row = idx / (HeadDim / 4), col = (idx % (HeadDim / 4)) * 4;
      *reinterpret_cast<uint2*>(gO + int64_t(row) * p.o_row_stride + col) = uint2{0u, 0u};
    }
    for (int row = r0 + tid; row < r_end; row += T::kThreads) gLse[row] = -INFINITY;
  });
}

// Stages is unused (the loop order fixes the buffering: K_j/V_j once, Q_i double).
template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa1Kernel {
  using T = Fa1Traits<Elem, HeadDim, BlockM, BlockN, Warps>;
  static int64_t workspace_bytes(const AttnParams& p) { return fa1_workspace_bytes(p); }
  static const char* unsupported(const AttnParams& p) {
    return tiled_kernel_unsupported(p, elem_type_of<Elem>(), HeadDim);
  }
  static int launch(const AttnParams& p, cudaStream_t stream) {
    if (p.workspace == nullptr || p.workspace_bytes < fa1_workspace_bytes(p))
      return int(cudaErrorInvalidValue);
    auto kernel = fa1_fwd_kernel<Elem, HeadDim, BlockM, BlockN, Warps>;
    FA_CUDA_RETURN_IF_ERROR(set_max_dynamic_smem(kernel, T::kSmemBytes));
    const int64_t bh = int64_t(p.batch) * p.heads;
    const int m_blocks = (p.seqlen_q + BlockM - 1) / BlockM;
    const int splits = int(fa1_splits(bh, m_blocks, Warps));
    if (bh > 0x7fffffff || splits > 65535) return int(cudaErrorInvalidConfiguration);
    kernel<<<dim3(unsigned(bh), unsigned(splits)), T::kThreads, T::kSmemBytes, stream>>>(p);
    return int(cudaGetLastError());
  }
};

}  // namespace fa
