// FlashAttention (Dao et al. 2022) backward, the paper's Algorithm 4, on the same
// warp-level tensor-core GEMMs as the forward (mma.sync m16n8k16):
//
//   one CTA per (K/V block j, batch, KV head); dQ accumulates in a float32
//   workspace, zeroed before the launch
//   load K_j, V_j into smem; dK_j = dV_j = 0 on chip       (the outer loop over j
//                                                           is the grid)
//   for each query head h of the KV head's group, each Q block i that sees block j:
//                                                          (inner loop; Q_i, dO_i, O_i,
//                                                           LSE_i double-buffered)
//     load Q_i, O_i, dO_i, LSE_i from HBM
//     S = scale Q_i K_j^T; P = exp(S - LSE_i)              (masked: P = 0)
//     dV_j += P^T dO_i
//     dP = dO_i V_j^T
//     D_i = rowsum(dO_i o O_i)                             (in the inner loop, where
//                                                           Algorithm 4 computes it)
//     dS = P o (dP - D_i)
//     dQ_i += scale dS K_j                                 (float32 atomic add in HBM)
//     dK_j += scale dS^T Q_i
//   write dK_j, dV_j; then one pass converts dQ to the dtype
//
// Our forward saves LSE = m + log l (natural log, -inf for a row that sees no
// key), so exp(S - LSE) is Algorithm 4's diag(l)^-1 exp(S - m). Scores stay
// unscaled in the accumulators and exp2 takes scale*log2(e) folded in; the scale
// of dQ and dK is applied once, when they are written. P is rounded to the dtype
// once, for dV's GEMM, and dS uses that same P (one 16-bit copy in registers
// instead of the floats keeps the key-per-warp tiles from spilling).
//
// Spreading j over CTAs (Algorithm 4 runs j in sequence inside one thread block)
// is what flash-attention v1's backward did to fill the GPU; it turns the
// read-modify-write of dQ_i into float32 atomic adds (red.global.add.v2.f32),
// whose order is not fixed. p.deterministic fixes it: CTAs take turns at each
// (head, Q block), in increasing j (common/global_accumulate.cuh).
//
// GQA/MQA: a CTA serves one KV head, so its inner loop runs over every query head
// of the group: dK_j, dV_j sum over the group on chip and are written once.
//
// Warps: each owns 16*kKTiles keys of the block and computes S^T = K_j Q_i^T and
// dP^T = V_j dO_i^T for them (keys as rows), so P^T and dS^T come out of the
// accumulators as the A operand of dV += P^T dO_i and dK += dS^T Q_i. With more
// warps than 16-key groups (hd256: dK and dV of 16 keys over the whole head dim do
// not fit one warp's registers), kWarpsD warps share a key group: they split S^T's
// queries and dK/dV's head dim, and pass P^T through shared memory. dS^T always
// goes through shared memory: dQ_i = dS K_j sums over all keys, so it is computed
// in its own warp layout (rows x head dim) from there.
//
// Per inner step, with Stages = 2: barrier; issue the next step's loads; the four
// GEMMs of S^T, dP^T (and, keys per warp, dV and dK); wait for the next loads;
// barrier; D of the next step (from its landed O and dO) while dQ's GEMM and
// atomics run. With Stages = 1 (where two stages do not fit), D is computed at the
// top, the next O_i loads from there on, and the next Q_i, dO_i, LSE_i wait for a
// barrier after dV and dK.
//
// HBM traffic per (batch, query head), s = dtype bytes, G = heads / heads_kv,
// r_i the rows of Q block i and V_i the number of B_c = block_n wide K/V blocks
// it sees (as in the forward's model):
//   read  = 2*s*N_k*d / G                          (K_j, V_j once per KV head)
//         + sum_i V_i * r_i * (3*s*d + 4)          (Q_i, O_i, dO_i, LSE_i per pair)
//         + sum_i V_i * r_i * 4*d                  (dQ_i read by the atomic add)
//         + 4*N_q*d                                (dQ read by the conversion)
//   write = 4*N_q*d                                (dQ zeroed)
//         + sum_i V_i * r_i * 4*d                  (dQ_i written by the atomic add)
//         + s*N_q*d + 2*s*N_k*d / G                (dQ, dK, dV in the dtype)
// p.deterministic adds a 4-byte turn counter per (batch, head, Q block) (zeroed,
// then read and written once per visited pair) and a 4-byte dispatch ticket.
// Extra memory: 4*B*H*N_q*d for the dQ accumulator (+ 4*B*H*T_r + 4 for the
// counters and the ticket), rounded up to 256 bytes.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"
#include "common/cuda_check.cuh"
#include "common/global_accumulate.cuh"
#include "common/mask.cuh"
#include "common/mma_sm80.cuh"
#include "common/shape_checks.cuh"
#include "common/softmax.cuh"
#include "common/warp_mma.cuh"
#include "common/warp_mma_bwd.cuh"

namespace fa {

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa1BwdTraits {
  static constexpr int kThreads = Warps * 32;
  // S^T, dP^T, dK, dV: kWarpsN key groups of 16*kKTiles keys, kWarpsD warps each
  // (splitting S^T's queries and dK/dV's head dim).
  static constexpr int kWarpsN = Warps < BlockN / 16 ? Warps : BlockN / 16;
  static constexpr int kWarpsD = Warps / kWarpsN;
  static constexpr int kKTiles = BlockN / (16 * kWarpsN);
  static constexpr int kQCols = BlockM / kWarpsD;   // queries of S^T per warp
  static constexpr int kQTiles = kQCols / 8;
  static constexpr int kDCols = HeadDim / kWarpsD;  // dK/dV columns per warp
  static constexpr int kDTiles = kDCols / 8;
  static constexpr bool kPInRegs = kWarpsD == 1;    // P^T stays in registers for dV
  // dQ_i = dS K_j: kQWarpsM x kQWarpsD warps over BlockM x HeadDim.
  static constexpr int kQWarpsM = Warps < BlockM / 32 ? Warps : BlockM / 32;
  static constexpr int kQWarpsD = Warps / kQWarpsM;
  static constexpr int kQMTiles = BlockM / (16 * kQWarpsM);
  static constexpr int kQDTiles = HeadDim / (8 * kQWarpsD);
  static constexpr int kQPasses = kQMTiles * kQDTiles > 8 ? kQMTiles * kQDTiles / 8 : 1;
  // Shared memory: K_j, V_j; dS^T (and P^T when warps share keys) [BlockN][BlockM];
  // Stages x {Q_i, dO_i, O_i [BlockM][HeadDim], LSE_i [BlockM] float32}; D_i.
  static constexpr int kKVElems = BlockN * HeadDim;
  static constexpr int kQElems = BlockM * HeadDim;
  static constexpr int kScoreElems = BlockN * BlockM;
  static constexpr int kStageBytes = int(3 * kQElems * sizeof(Elem) + BlockM * sizeof(float));
  static constexpr int kSmemBytes = int((2 * kKVElems + (kPInRegs ? 1 : 2) * kScoreElems) *
                                        sizeof(Elem)) +
                                    Stages * kStageBytes + int(BlockM * sizeof(float));
  static_assert(Warps % kWarpsN == 0 && BlockN % (16 * kWarpsN) == 0, "whole 16-key tiles per warp");
  static_assert(BlockM % (16 * kWarpsD) == 0 && (kQCols & (kQCols - 1)) == 0,
                "power-of-two 16-query slices of S^T per warp (store_a)");
  static_assert(HeadDim % (16 * kWarpsD) == 0 && HeadDim % 64 == 0, "16-column dK/dV slices");
  static_assert(BlockM % 64 == 0, "dS^T rows are swizzled 16-byte chunks: >= 64 queries");
  static_assert(BlockM >= 32 * kQWarpsM && Warps % kQWarpsM == 0 &&
                    kQDTiles % (2 * kQPasses) == 0,
                "dQ tiles of 32 rows x 16k columns per warp and pass");
  static_assert(Stages == 1 || Stages == 2, "one or two Q_i/dO_i/O_i buffers");
  static_assert(BlockM <= kThreads && kThreads % BlockM == 0, "LSE_i and D_i: whole threads per row");
  static_assert(kStageBytes % 128 == 0, "stages start 128-byte aligned (swizzle_step)");
  static_assert(kSmemBytes <= 227 * 1024, "tile does not fit in shared memory");
};

// Workspace: dQ float32 [batch*heads, seqlen_q, head_dim]; deterministic: then one
// turn counter per (batch*head, Q block), then the dispatch ticket.
inline int64_t fa1_bwd_dq_bytes(const AttnParams& p) {
  const int64_t bytes = int64_t(p.batch) * p.heads * p.seqlen_q * p.head_dim * int64_t(sizeof(float));
  return (bytes + 255) / 256 * 256;
}
template <int BlockM>
int64_t fa1_bwd_workspace_bytes(const AttnParams& p) {
  const int64_t m_blocks = (p.seqlen_q + BlockM - 1) / BlockM;
  return fa1_bwd_dq_bytes(p) +
         (p.deterministic ? (int64_t(p.batch) * p.heads * m_blocks + 1) * int64_t(sizeof(int)) : 0);
}

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
__global__ void __launch_bounds__(Warps * 32)
    fa1_bwd_kernel(const AttnParams p, float* dq_acc, int* dq_turns) {
  using T = Fa1BwdTraits<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Elem* sK = reinterpret_cast<Elem*>(smem_raw);
  Elem* sV = sK + T::kKVElems;
  Elem* sdS = sV + T::kKVElems;                              // dS^T [BlockN][BlockM]
  Elem* sP = sdS + T::kScoreElems;                           // P^T (warps sharing keys)
  unsigned char* stages = reinterpret_cast<unsigned char*>(sP + (T::kPInRegs ? 0 : T::kScoreElems));
  float* sD = reinterpret_cast<float*>(stages + Stages * T::kStageBytes);  // D_i [BlockM]
  auto sQ = [&](int s) { return reinterpret_cast<Elem*>(stages + s * T::kStageBytes); };
  auto sdO = [&](int s) { return sQ(s) + T::kQElems; };
  auto sO = [&](int s) { return sQ(s) + 2 * T::kQElems; };
  // LSE_i, turned by compute_d into the exp2 offset LSE*log2(e) (+inf: P = 0).
  auto sLse = [&](int s) { return reinterpret_cast<float*>(sQ(s) + 3 * T::kQElems); };

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int sq = p.seqlen_q, sk = p.seqlen_k;
  const int m_blocks = (sq + BlockM - 1) / BlockM;
  // Which K/V block j of which (batch, KV head) this CTA runs: blockIdx, or in
  // the deterministic mode a ticket taken on arrival, in the same order. A CTA
  // there waits for the CTAs of the lower j of its (batch, KV head), and those
  // hold lower tickets: they were running when they took them, so they finish
  // whatever order the hardware starts CTAs in (with blockIdx, progress would
  // rest on CTAs being started in grid order).
  int cta = blockIdx.y * gridDim.x + blockIdx.x;
  if (p.deterministic) {
    __shared__ int ticket;
    if (tid == 0) ticket = atomicAdd(dq_turns + int64_t(p.batch) * p.heads * m_blocks, 1);
    __syncthreads();
    cta = ticket;
  }
  const int j = cta % gridDim.x;  // K/V block
  const int b = cta / gridDim.x / p.heads_kv, hk = cta / gridDim.x % p.heads_kv;
  const int group = p.heads / p.heads_kv;
  const KeyRange kr{sq, sk, p.causal};

  // The first Q block whose rows see key j*BlockN (causal: earlier rows see none of block j).
  int i_begin = 0;
  if (p.causal) {
    const int first_row = j * BlockN - (sk - sq);  // key_end(row) > j*BlockN from here on
    i_begin = first_row <= 0 ? 0 : first_row / BlockM;
  }
  const int n_i = i_begin < m_blocks ? m_blocks - i_begin : 0;
  const int steps = group * n_i;  // (query head of the group, Q block) pairs

  // Warp roles: key group wn (S^T rows, dK/dV rows), slice wd (S^T queries, dK/dV
  // columns); dQ tile (qm, qd).
  const int wn = warp % T::kWarpsN, wd = warp / T::kWarpsN;
  const int key0 = wn * 16 * T::kKTiles, q0 = wd * T::kQCols, d0 = wd * T::kDCols;
  const int qm = warp % T::kQWarpsM, qd = warp / T::kQWarpsM;

  // Per-lane ldmatrix bases (stage 0; a stage adds s * kStageBytes).
  const uint32_t k_a = q_lane_base<HeadDim>(sK, key0, lane);  // K_j as A of S^T
  const uint32_t v_a = q_lane_base<HeadDim>(sV, key0, lane);  // V_j as A of dP^T
  const uint32_t q_b = k_lane_base<HeadDim>(sQ(0), lane) + q0 * HeadDim * 2;    // Q_i as B of S^T
  const uint32_t do_b = k_lane_base<HeadDim>(sdO(0), lane) + q0 * HeadDim * 2;  // dO_i as B of dP^T
  const uint32_t do_t = v_lane_base<HeadDim>(sdO(0), lane);  // dO_i as B of dV (transposed)
  const uint32_t q_t = v_lane_base<HeadDim>(sQ(0), lane);    // Q_i as B of dK (transposed)
  // P^T, dS^T as A of dV, dK (warps sharing keys)
  const uint32_t pt_a = q_lane_base<BlockM>(sP, key0, lane);
  const uint32_t dst_a = q_lane_base<BlockM>(sdS, key0, lane);
  // dQ's operands at this warp's first rows / columns: dS (from dS^T) as A, K_j as B
  const uint32_t dq_a = swizzle_step(at_lane_base<BlockM>(sdS, lane), qm * T::kQMTiles);
  const uint32_t dq_b = swizzle_step(v_lane_base<HeadDim>(sK, lane), qd * T::kQDTiles / 2);

  const Elem* gK = static_cast<const Elem*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride +
                   int64_t(j) * BlockN * p.k_row_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride +
                   int64_t(j) * BlockN * p.v_row_stride;
  const int keys_valid = sk - j * BlockN;
  // Block j needs a mask on its ragged tail (every step) or, causal, where a row does
  // not see all of it.
  const bool tail = (j + 1) * BlockN > sk;

  struct Step {
    int h, i;
  };
  // Q blocks i_begin .. m_blocks - 1 of query head hk*group, then of the next head, ...
  auto advance = [&](Step x) {
    if (++x.i == m_blocks) {
      x.i = i_begin;
      ++x.h;
    }
    return x;
  };

  // The stage's tiles; load_o (O_i, read only by compute_d) and load_rest apart, so
  // with one stage O_i's copy can start as soon as D_i is computed.
  auto gmem_rows = [&](const void* base, int64_t batch_stride, int64_t head_stride,
                       int64_t row_stride, Step st) {
    return static_cast<const Elem*>(base) + b * batch_stride + st.h * head_stride +
           int64_t(st.i) * BlockM * row_stride;
  };
  auto load_o = [&](Step st, int s) {
    load_tile_async<BlockM, HeadDim, T::kThreads>(
        sO(s), gmem_rows(p.o, p.o_batch_stride, p.o_head_stride, p.o_row_stride, st), p.o_row_stride,
        sq - st.i * BlockM, tid);
  };
  auto load_rest = [&](Step st, int s) {
    const int rows_valid = sq - st.i * BlockM;
    load_tile_async<BlockM, HeadDim, T::kThreads>(
        sQ(s), gmem_rows(p.q, p.q_batch_stride, p.q_head_stride, p.q_row_stride, st), p.q_row_stride,
        rows_valid, tid);
    load_tile_async<BlockM, HeadDim, T::kThreads>(
        sdO(s), gmem_rows(p.dout, p.do_batch_stride, p.do_head_stride, p.do_row_stride, st),
        p.do_row_stride, rows_valid, tid);
    if (tid < BlockM) {
      const bool valid = tid < rows_valid;
      const float* src = p.lse + (int64_t(b) * p.heads + st.h) * sq + int64_t(st.i) * BlockM + tid;
      cp_async_4(smem_addr(sLse(s) + tid), valid ? src : p.lse, valid);
    }
  };
  auto load_stage = [&](Step st, int s) {
    load_rest(st, s);
    load_o(st, s);
  };
  // D_i = rowsum(dO_i o O_i) into sD, and LSE_i into its exp2 offset (+inf where the
  // row sees no key or lies past seqlen_q: P = exp2(-inf) = 0 there, never NaN).
  auto compute_d = [&](Step st, int s) {
    int r;
    const float dsum = tile_row_dot<Elem, BlockM, HeadDim, T::kThreads>(sdO(s), sO(s), tid, r);
    if (tid % (T::kThreads / BlockM) == 0) {
      sD[r] = dsum;
      const float lse = sLse(s)[r];
      const bool valid = st.i * BlockM + r < sq;
      sLse(s)[r] = valid && lse != -INFINITY ? lse * 1.4426950408889634f : INFINITY;
    }
  };

  float acc_dv[T::kKTiles][T::kDTiles][4], acc_dk[T::kKTiles][T::kDTiles][4];
  zero(acc_dv);
  zero(acc_dk);

  if (steps > 0) {
    load_tile_async<BlockN, HeadDim, T::kThreads>(sK, gK, p.k_row_stride, keys_valid, tid);
    load_tile_async<BlockN, HeadDim, T::kThreads>(sV, gV, p.v_row_stride, keys_valid, tid);
    load_stage(Step{hk * group, i_begin}, 0);
    cp_async_commit();
    if constexpr (Stages == 2) {
      cp_async_wait<0>();
      __syncthreads();
      compute_d(Step{hk * group, i_begin}, 0);
    }
  }

  Step st{hk * group, i_begin};
  for (int step = 0; step < steps; ++step, st = advance(st)) {
    const int s = Stages == 2 ? (step & 1) : 0;
    const bool has_next = step + 1 < steps;
    if constexpr (Stages == 1) {
      cp_async_wait<0>();
      __syncthreads();  // this step's loads landed; the previous step's sD reads are done
      compute_d(st, 0);
    }
    __syncthreads();  // sD, the LSE offsets visible; every warp is done with the other stage and sdS
    if constexpr (Stages == 2) {
      if (has_next) load_stage(advance(st), s ^ 1);
      cp_async_commit();
    } else {
      if (has_next) load_o(advance(st), 0);  // O_i has served its only purpose, D_i
      cp_async_commit();
    }
    const uint32_t so = uint32_t(s * T::kStageBytes);
    const float* lse2 = sLse(s) + q0;

    // S^T = K_j Q_i^T (this warp's keys x queries); P = exp2(S scale log2 e - LSE log2 e)
    float acc_s[T::kKTiles][T::kQTiles][4];
    zero(acc_s);
    warp_qk<Elem, HeadDim>(acc_s, k_a, q_b + so);
    const int q_first = st.i * BlockM + q0;
    if (tail || (p.causal && kr.key_end(q_first) < (j + 1) * BlockN))
      mask_scores_transposed(acc_s, kr, j * BlockN + key0, q_first, lane);
#pragma unroll
    for (int nt = 0; nt < T::kQTiles; ++nt) {
      const float2 l = *reinterpret_cast<const float2*>(lse2 + nt * 8 + 2 * t);
#pragma unroll
      for (int kt = 0; kt < T::kKTiles; ++kt) {
        float* a = acc_s[kt][nt];
        a[0] = fast_exp2(fmaf(a[0], p.softmax_scale_log2, -l.x));
        a[1] = fast_exp2(fmaf(a[1], p.softmax_scale_log2, -l.y));
        a[2] = fast_exp2(fmaf(a[2], p.softmax_scale_log2, -l.x));
        a[3] = fast_exp2(fmaf(a[3], p.softmax_scale_log2, -l.y));
      }
    }

    // P rounded to the dtype, as the dV GEMM takes it; dS below uses the same P.
    // One 16-bit copy instead of the floats keeps the key-per-warp tiles in registers.
    uint32_t p_a[T::kKTiles][T::kQTiles / 2][4];
    pack_a<Elem>(p_a, acc_s);
    if constexpr (T::kPInRegs) warp_ab<Elem, HeadDim>(acc_dv, p_a, do_t + so);  // dV_j += P^T dO_i
    else store_a<BlockM>(sP, p_a, key0, q0, lane);

    // dP^T = V_j dO_i^T; dS = P o (dP - D_i), in place of dP
    float acc_ds[T::kKTiles][T::kQTiles][4];
    zero(acc_ds);
    warp_qk<Elem, HeadDim>(acc_ds, v_a, do_b + so);
#pragma unroll
    for (int nt = 0; nt < T::kQTiles; ++nt) {
      const float2 dd = *reinterpret_cast<const float2*>(sD + q0 + nt * 8 + 2 * t);
#pragma unroll
      for (int kt = 0; kt < T::kKTiles; ++kt) {
        // p_a[kt][nt / 2][2 * (nt % 2) + half]: P of keys g (+8), queries 2t, 2t + 1
        const float2 p0 = unpack2<Elem>(p_a[kt][nt / 2][2 * (nt % 2)]);
        const float2 p1 = unpack2<Elem>(p_a[kt][nt / 2][2 * (nt % 2) + 1]);
        float* a = acc_ds[kt][nt];
        a[0] = p0.x * (a[0] - dd.x);
        a[1] = p0.y * (a[1] - dd.y);
        a[2] = p1.x * (a[2] - dd.x);
        a[3] = p1.y * (a[3] - dd.y);
      }
    }
    uint32_t ds_a[T::kKTiles][T::kQTiles / 2][4];
    pack_a<Elem>(ds_a, acc_ds);
    store_a<BlockM>(sdS, ds_a, key0, q0, lane);  // for dQ (and dK of warps sharing keys)
    if constexpr (T::kPInRegs) warp_ab<Elem, HeadDim>(acc_dk, ds_a, q_t + so);  // dK_j += dS^T Q_i
    if constexpr (Stages == 2) cp_async_wait<0>();
    __syncthreads();  // dS^T (P^T) visible; the next step's loads landed
    if constexpr (Stages == 2) {
      if (has_next) compute_d(advance(st), s ^ 1);
    }
    if constexpr (!T::kPInRegs) {
      // dV_j += P^T dO_i, dK_j += dS^T Q_i over the whole Q block, this warp's columns
      warp_pv_smem<Elem, BlockM, HeadDim>(acc_dv, pt_a, swizzle_step(do_t, d0 / 16) + so, 0);
      warp_pv_smem<Elem, BlockM, HeadDim>(acc_dk, dst_a, swizzle_step(q_t, d0 / 16) + so, 0);
    }
    if constexpr (Stages == 1) {
      __syncthreads();  // every warp is done with Q_i, dO_i, LSE_i
      if (has_next) load_rest(advance(st), 0);
      cp_async_commit();
    }

    // dQ_i += dS K_j (unscaled; the conversion applies the scale), in kQPasses
    // column passes so the float32 tile stays at 32 registers beside dK_j and dV_j.
    int* turn = dq_turns + (int64_t(b) * p.heads + st.h) * m_blocks + st.i;
    float* dq = dq_acc + ((int64_t(b) * p.heads + st.h) * sq + int64_t(st.i) * BlockM) * HeadDim;
    constexpr int kPassTiles = T::kQDTiles / T::kQPasses;
#pragma unroll
    for (int pass = 0; pass < T::kQPasses; ++pass) {
      float acc_dq[T::kQMTiles][kPassTiles][4];
      zero(acc_dq);
      warp_at_b<Elem, BlockN, BlockM, HeadDim>(acc_dq, dq_a, swizzle_step(dq_b, pass * kPassTiles / 2));
      if (pass == 0 && p.deterministic) {
        if (tid == 0) wait_turn(turn, j);
        __syncthreads();
      }
#pragma unroll
      for (int mt = 0; mt < T::kQMTiles; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = (qm * T::kQMTiles + mt) * 16 + g + half * 8;
          if (st.i * BlockM + r >= sq) continue;
#pragma unroll
          for (int dt = 0; dt < kPassTiles; ++dt) {
            const int col = (qd * T::kQDTiles + pass * kPassTiles + dt) * 8 + 2 * t;
            red_add_v2(dq + r * HeadDim + col, acc_dq[mt][dt][2 * half], acc_dq[mt][dt][2 * half + 1]);
          }
        }
      }
    }
    if (p.deterministic) {
      __threadfence();
      __syncthreads();
      if (tid == 0) pass_turn(turn, j + 1);
    }
  }

  // dK_j = scale * sum dS^T Q_i, dV_j = sum P^T dO_i (0 for keys no query sees).
  Elem* gdK = static_cast<Elem*>(p.dk) + b * p.dk_batch_stride + hk * p.dk_head_stride;
  Elem* gdV = static_cast<Elem*>(p.dv) + b * p.dv_batch_stride + hk * p.dv_head_stride;
#pragma unroll
  for (int kt = 0; kt < T::kKTiles; ++kt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int key = j * BlockN + key0 + kt * 16 + g + half * 8;
      if (key >= sk) continue;
#pragma unroll
      for (int dt = 0; dt < T::kDTiles; ++dt) {
        const int col = d0 + dt * 8 + 2 * t;
        *reinterpret_cast<uint32_t*>(gdK + int64_t(key) * p.dk_row_stride + col) =
            pack2<Elem>(acc_dk[kt][dt][2 * half] * p.softmax_scale,
                        acc_dk[kt][dt][2 * half + 1] * p.softmax_scale);
        *reinterpret_cast<uint32_t*>(gdV + int64_t(key) * p.dv_row_stride + col) =
            pack2<Elem>(acc_dv[kt][dt][2 * half], acc_dv[kt][dt][2 * half + 1]);
      }
    }
  }
}

// dQ = scale * the float32 sums, to the dtype in dQ's layout: 4 elements a thread.
template <typename Elem, int HeadDim>
__global__ void fa1_bwd_store_dq(const AttnParams p, const float* dq_acc) {
  const int64_t n4 = int64_t(p.batch) * p.heads * p.seqlen_q * (HeadDim / 4);
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n4;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = e / (HeadDim / 4);  // (b * heads + h) * seqlen_q + i
    const int c = int(e % (HeadDim / 4)) * 4;
    const int64_t bh = row / p.seqlen_q;
    const int i = int(row % p.seqlen_q), b = int(bh / p.heads), h = int(bh % p.heads);
    const float4 v = reinterpret_cast<const float4*>(dq_acc)[e];
    const float s = p.softmax_scale;
    *reinterpret_cast<uint2*>(static_cast<Elem*>(p.dq) + b * p.dq_batch_stride + i * p.dq_row_stride +
                              h * p.dq_head_stride + c) =
        uint2{pack2<Elem>(v.x * s, v.y * s), pack2<Elem>(v.z * s, v.w * s)};
  }
}

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa1BwdKernel {
  using T = Fa1BwdTraits<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
  static int64_t workspace_bytes(const AttnParams& p) { return fa1_bwd_workspace_bytes<BlockM>(p); }
  static const char* unsupported(const AttnParams& p) {
    if (int64_t(p.batch) * p.heads_kv > 65535) return "batch * heads_kv above 65535 (grid y)";
    return tiled_backward_unsupported(p, elem_type_of<Elem>(), HeadDim);
  }
  static int launch(const AttnParams& p, cudaStream_t stream) {
    if (p.workspace == nullptr || p.workspace_bytes < workspace_bytes(p))
      return int(cudaErrorInvalidValue);
    float* dq_acc = static_cast<float*>(p.workspace);
    int* turns = reinterpret_cast<int*>(static_cast<char*>(p.workspace) + fa1_bwd_dq_bytes(p));
    FA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dq_acc, 0, fa1_bwd_dq_bytes(p), stream));
    if (p.deterministic)
      FA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
          turns, 0, workspace_bytes(p) - fa1_bwd_dq_bytes(p), stream));
    const int n_blocks = (p.seqlen_k + BlockN - 1) / BlockN;
    const int bkv = p.batch * p.heads_kv;
    if (bkv > 65535) return int(cudaErrorInvalidConfiguration);
    if (n_blocks > 0 && bkv > 0) {
      auto kernel = fa1_bwd_kernel<Elem, HeadDim, BlockM, BlockN, Warps, Stages>;
      FA_CUDA_RETURN_IF_ERROR(set_max_dynamic_smem(kernel, T::kSmemBytes));
      kernel<<<dim3(unsigned(n_blocks), unsigned(bkv)), T::kThreads, T::kSmemBytes, stream>>>(
          p, dq_acc, turns);
      FA_CUDA_RETURN_LAUNCH_ERROR();
    }
    const int64_t n4 = int64_t(p.batch) * p.heads * p.seqlen_q * (HeadDim / 4);
    if (n4 > 0) {
      const int64_t blocks = (n4 + 255) / 256;
      fa1_bwd_store_dq<Elem, HeadDim>
          <<<unsigned(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(p, dq_acc);
      FA_CUDA_RETURN_LAUNCH_ERROR();
    }
    return 0;
  }
};

}  // namespace fa
