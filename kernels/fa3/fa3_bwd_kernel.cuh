// The FA3 backward kernel (sm_90a). One block per K/V block of one (batch, kv
// head): K and V stay in shared memory while a producer warp streams the Q
// blocks (with dO, LSE and D) through a Stages-deep mbarrier ring; two consumer
// warpgroups recompute P and compute dS with wgmma, accumulate dK and dV in
// registers, and add dQ to a float32 accumulator in global memory (through a
// second producer warp's bulk reduce-adds, or at head_dim 256 with red.global).
// docs/FA3.md, "Backward", draws the roles, barriers and pipeline.
//
// Per Q block, for a consumer owning 64 keys of the K/V block (tau = softmax
// scale; dK and dQ are scaled by tau once, at the end):
//   S^T  = K Q^T                    wgmma SS
//   dP^T = V dO^T                   wgmma SS
//   P^T  = exp(tau S^T - LSE)       registers (masked where needed)
//   dS^T = P^T o (dP^T - D)         registers; also stored to shared memory
//   dV  += P^T dO                   wgmma RS: P^T is already an A fragment
//   dQ   = dS K  (64x64 tasks)      wgmma SS, A = dS^T read transposed
//   dK  += dS^T Q                   wgmma RS
// At head_dim 256 the two consumers share the keys and split head_dim; P^T and
// dS^T then go through shared memory and dV, dK are SS GEMMs (grads_shared).
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/sm90/arch.cuh"
#include "common/sm90/barrier.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/regs.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/wgmma.cuh"
#include "fa3/fa3_bwd_args.cuh"
#include "fa3/fa3_bwd_traits.cuh"
#include "fa3/fa3_bwd_math.cuh"
#include "fa3/fa3_kernel.cuh"  // RingPos
#include "fa3/fa3_softmax.cuh"

namespace fa::fa3 {

// Shared-memory views of one block: tiles and mbarriers at Fa3BwdTraits's offsets.
template <typename Cfg>
struct BwdSmem {
  uint8_t* base;
  __device__ uint8_t* k() const { return base + Cfg::kOffK; }
  __device__ uint8_t* v() const { return base + Cfg::kOffV; }
  __device__ uint8_t* q(int s) const { return base + Cfg::kOffQ + s * Cfg::kQBytes; }
  __device__ uint8_t* dout(int s) const { return base + Cfg::kOffDo + s * Cfg::kQBytes; }
  __device__ uint8_t* ds(int s) const { return base + Cfg::kOffDs + s * Cfg::kDsBytes; }
  __device__ uint8_t* p() const { return base + Cfg::kOffP; }  // P^T, kSplitHd only
  __device__ float* dq(int task) const {
    return reinterpret_cast<float*>(base + Cfg::kOffDq + task * Cfg::kDqTaskBytes);
  }
  __device__ float* lse2(int s) const { return reinterpret_cast<float*>(base + Cfg::kOffLse + s * Cfg::kRowStatBytes); }
  __device__ float* dpsum(int s) const {
    return reinterpret_cast<float*>(base + Cfg::kOffDpsum + s * Cfg::kRowStatBytes);
  }
  __device__ sm90::MBarrier* bars() const { return reinterpret_cast<sm90::MBarrier*>(base + Cfg::kOffBar); }
  __device__ sm90::MBarrier& kv_full() const { return bars()[0]; }              // K and V landed
  __device__ sm90::MBarrier& q_full(int s) const { return bars()[1 + 4 * s]; }  // Q + LSE in stage s
  __device__ sm90::MBarrier& q_empty(int s) const { return bars()[2 + 4 * s]; }
  __device__ sm90::MBarrier& do_full(int s) const { return bars()[3 + 4 * s]; }  // dO + D in stage s
  __device__ sm90::MBarrier& do_empty(int s) const { return bars()[4 + 4 * s]; }
};

template <typename Elem, typename Cfg>
struct Fa3Bwd {
  static constexpr int BM = Cfg::kBlockM, BN = Cfg::kBlockN, HD = Cfg::kHeadDim;
  static constexpr bool kBf16 = std::is_same_v<Elem, __nv_bfloat16>;

  // Offset of Q block m of query head `head` in the per-row workspace arrays.
  static __device__ __forceinline__ int64_t row_block(const BwdArgs& a, const BwdTile& t, int head, int m) {
    return (int64_t(t.batch) * a.heads + head) * a.num_m_blocks + m;
  }

  // Producer warp, one thread: K and V once, then per Q block its Q (+ LSE) and
  // dO (+ D) into the ring, each stage reused once every consumer released it.
  static __device__ __forceinline__ void producer(const BwdArgs& a, const BwdSmem<Cfg>& sm, const BwdTile& t) {
    sm.kv_full().arrive_expect_tx(2 * Cfg::kKVBytes);
    for (int p = 0; p < Cfg::kPanels; ++p) {
      sm90::tma_load_4d(sm.k() + p * Cfg::kKVPanelBytes, &a.tma_k, &sm.kv_full().word, p * 64, t.n_block * BN,
                        t.kv_head, t.batch);
      sm90::tma_load_4d(sm.v() + p * Cfg::kKVPanelBytes, &a.tma_v, &sm.kv_full().word, p * 64, t.n_block * BN,
                        t.kv_head, t.batch);
    }
    RingPos<Cfg::kStages> ring;
    for (int hq = 0; hq < t.group; ++hq) {
      const int head = t.kv_head * t.group + hq;
      // Stepped, not recomputed per block: the producer runs on 24 registers.
      int64_t stats = row_block(a, t, head, t.m_begin) * BM;
      for (int m = t.m_begin; m < a.num_m_blocks; ++m, ++ring.count, stats += BM) {
        const int s = ring.stage();
        sm.q_empty(s).wait(ring.parity() ^ 1);
        sm.q_full(s).arrive_expect_tx(Cfg::kQBytes + Cfg::kRowStatBytes);
        for (int p = 0; p < Cfg::kPanels; ++p)
          sm90::tma_load_4d(sm.q(s) + p * Cfg::kQPanelBytes, &a.tma_q, &sm.q_full(s).word, p * 64, m * BM, head,
                            t.batch);
        sm90::bulk_load(sm.lse2(s), a.lse_log2 + stats, Cfg::kRowStatBytes, &sm.q_full(s).word);
        sm.do_empty(s).wait(ring.parity() ^ 1);
        sm.do_full(s).arrive_expect_tx(Cfg::kQBytes + Cfg::kRowStatBytes);
        for (int p = 0; p < Cfg::kPanels; ++p)
          sm90::tma_load_4d(sm.dout(s) + p * Cfg::kQPanelBytes, &a.tma_do, &sm.do_full(s).word, p * 64, m * BM,
                            head, t.batch);
        sm90::bulk_load(sm.dpsum(s), a.dpsum + stats, Cfg::kRowStatBytes, &sm.do_full(s).word);
      }
    }
  }

  // dQ warp: per Q block, adds each consumer's dQ task from shared memory to the
  // float32 accumulator with one bulk reduce-add, then hands the slot back. In
  // the deterministic mode it first waits until the tiles of the lower K/V blocks
  // have added theirs, so every element sums in n_block order.
  static __device__ __forceinline__ void dq_writer(const BwdArgs& a, const BwdSmem<Cfg>& sm, const BwdTile& t) {
    const bool leader = threadIdx.x % 32 == 0;
    const bool deterministic = a.deterministic != 0;
    for (int task = 0; task < Cfg::kDqTasks; ++task)
      sm90::named_barrier_arrive(Cfg::kDqEmptyBar + task, Cfg::kDqBarThreads);  // every slot starts empty
    for (int hq = 0; hq < t.group; ++hq) {
      const int head = t.kv_head * t.group + hq;
      for (int m = t.m_begin; m < a.num_m_blocks; ++m) {
        const int64_t blk = row_block(a, t, head, m);
        float* dst = a.dq_accum + blk * (BM * HD);
        if (deterministic && leader) wait_turn(a.dq_semaphore + blk, t.n_block);
        // bar.sync is .aligned: the warp meets each barrier converged.
        __syncwarp();
        for (int task = 0; task < Cfg::kDqTasks; ++task) {
          sm90::named_barrier_sync(Cfg::kDqFullBar + task, Cfg::kDqBarThreads);
          if (leader) {
            if constexpr (Cfg::kFault == Fa3BwdFault::dq_overwritten)  // planted: stored, not added
              sm90::bulk_store(dst + task * Cfg::kDqTaskFloats, sm.dq(task), Cfg::kDqTaskBytes);
            else
              sm90::bulk_reduce_add(dst + task * Cfg::kDqTaskFloats, sm.dq(task), Cfg::kDqTaskBytes);
          }
          __syncwarp();
        }
        if (leader) {
          sm90::bulk_commit();
          sm90::bulk_wait_read<0>();
        }
        __syncwarp();
        for (int task = 0; task < Cfg::kDqTasks; ++task)
          sm90::named_barrier_arrive(Cfg::kDqEmptyBar + task, Cfg::kDqBarThreads);
        if (deterministic && leader) pass_turn(a.dq_semaphore + blk);
      }
    }
  }

  // Deterministic mode: spin until `turn` tiles have added to this Q block.
  static __device__ __forceinline__ void wait_turn(const int* sem, int turn) {
    int seen;
    do {
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(sem) : "memory");
    } while (seen != turn);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_global);  // the reduce-add below comes after what we saw
  }
  // ... and once this tile's reduce-adds have landed, let the next tile in.
  static __device__ __forceinline__ void pass_turn(int* sem) {
    sm90::bulk_wait<0>();
    cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
    asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(sem) : "memory");
  }

  static constexpr int SC = Cfg::kSCols, DKV = Cfg::kDkvCols;

  // D (+)= X Y^T over head_dim: X = 64 rows of K or V (K-major A), Y = SC rows of
  // Q or dO (K-major B) starting at y: S^T or dP^T.
  static __device__ __forceinline__ void issue_xyt(float (&d)[SC / 2], uint64_t desc_x, const uint8_t* y) {
    const uint64_t desc_y = sm90::smem_desc_sw128(y, 16, 1024);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < HD / 16; ++k) {
      const uint64_t off_x = uint64_t((k / 4) * Cfg::kKVPanelBytes + (k % 4) * 32) >> 4;
      const uint64_t off_y = uint64_t((k / 4) * Cfg::kQPanelBytes + (k % 4) * 32) >> 4;
      sm90::WgmmaOp<SC>::template ss<kBf16, 0>(d, desc_x + off_x, desc_y + off_y, k > 0);
    }
    sm90::wgmma_commit();
  }

  // acc += A Y over the block's queries: A = P^T or dS^T from registers, Y = dO
  // or Q read MN-major (head_dim contiguous): dV or dK.
  static __device__ __forceinline__ void issue_ay(float (&acc)[DKV / 2], const uint32_t (&a)[BM / 16][4],
                                                  const uint8_t* y) {
    const uint64_t desc_y = sm90::smem_desc_sw128(y, Cfg::kQPanelBytes, 1024);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < BM / 16; ++k)
      sm90::WgmmaOp<DKV>::template rs<kBf16, 1>(acc, a[k], desc_y + (uint64_t(k * 16 * sm90::kPanelBytes) >> 4), 1);
    sm90::wgmma_commit();
  }

  // The same with A = P^T or dS^T from its shared tile (keys x queries, queries
  // contiguous: K-major), for the head_dim columns of Y starting at y (kSplitHd).
  static __device__ __forceinline__ void issue_ay_smem(float (&acc)[DKV / 2], const uint8_t* a_tile,
                                                       const uint8_t* y) {
    const uint64_t desc_a = sm90::smem_desc_sw128(a_tile, 16, 1024);
    const uint64_t desc_y = sm90::smem_desc_sw128(y, Cfg::kQPanelBytes, 1024);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < BM / 16; ++k) {
      const uint64_t off_a = uint64_t((k / 4) * Cfg::kDsPanelBytes + (k % 4) * 32) >> 4;
      const uint64_t off_y = uint64_t(k * 16 * sm90::kPanelBytes) >> 4;
      sm90::WgmmaOp<DKV>::template ss<kBf16, 1>(acc, desc_a + off_a, desc_y + off_y, 1);
    }
    sm90::wgmma_commit();
  }

  // dQ task = dS K for query rows 64 mc.. and head_dim columns 64 nc..: A = dS
  // read transposed from the dS^T panel mc, B = K panel nc read MN-major.
  static __device__ __forceinline__ void issue_dq(float (&dq)[32], const BwdSmem<Cfg>& sm, int ds_stage, int task) {
    const int mc = task / Cfg::kDqTasksN, nc = task % Cfg::kDqTasksN;
    const uint64_t desc_ds =
        sm90::smem_desc_sw128(sm.ds(ds_stage) + mc * Cfg::kDsPanelBytes, Cfg::kDsPanelBytes, 1024);
    const uint64_t desc_k = sm90::smem_desc_sw128(sm.k() + nc * Cfg::kKVPanelBytes, Cfg::kKVPanelBytes, 1024);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < BN / 16; ++k) {
      const uint64_t off = uint64_t(k * 16 * sm90::kPanelBytes) >> 4;
      sm90::WgmmaOp<64>::template ss<kBf16, 1, 1>(dq, desc_ds + off, desc_k + off, k > 0);
    }
    sm90::wgmma_commit();
  }

  // Which part of the K/V block a consumer owns: keys 64 * key_group .., and of
  // head_dim the dK / dV columns DKV * hd_part .. and the S^T columns (queries)
  // SC * hd_part .. of each Q block.
  struct Part {
    int c, key_group, hd_part;
    __device__ explicit Part(int c_) : c(c_), key_group(c_ / Cfg::kHdSplit), hd_part(c_ % Cfg::kHdSplit) {}
    __device__ int key_row0() const { return 64 * key_group; }
    __device__ int q_col0() const { return SC * hd_part; }
  };

  // Consumer warpgroup c.
  static __device__ __forceinline__ void consumer(const BwdArgs& a, const BwdSmem<Cfg>& sm, const BwdTile& t,
                                                  int c) {
    const Part part(c);
    const FragCoord fc = FragCoord::of_thread();
    float dk[DKV / 2], dv[DKV / 2];
#pragma unroll
    for (int i = 0; i < DKV / 2; ++i) dk[i] = dv[i] = 0.f;
    const uint64_t desc_k = sm90::smem_desc_sw128(sm.k() + part.key_row0() * sm90::kPanelBytes, 16, 1024);
    const uint64_t desc_v = sm90::smem_desc_sw128(sm.v() + part.key_row0() * sm90::kPanelBytes, 16, 1024);
    // planted causal_unmasked_recompute: P's mask forgets causal (m_begin still skips the blocks above)
    const bool causal = a.causal != 0 && Cfg::kFault != Fa3BwdFault::causal_unmasked_recompute;
    const KeyRange keys{a.seqlen_q, a.seqlen_k, causal};
    BwdMask mask(keys, t.n_block * BN + part.key_row0() + fc.row(0));
    sm.kv_full().wait(0);
    if constexpr (Cfg::kSplitHd)
      loop_split_hd(a, sm, t, part, fc, desc_k, desc_v, keys, mask, dk, dv);
    else
      loop_in_registers(a, sm, t, part, fc, desc_k, desc_v, keys, mask, dk, dv);
    store_dkdv(a, sm, t, part, fc, dk, dv);
  }

  // One Q block's P^T and dS^T for this consumer, in st and dp: S^T = K Q^T and
  // dP^T = V dO^T issued once stage s (the ring's) holds Q and dO, P^T formed while dP^T runs.
  static __device__ __forceinline__ void p_and_ds(const BwdArgs& a, const BwdSmem<Cfg>& sm, const BwdTile& t,
                                                  const Part& part, const FragCoord& fc, uint64_t desc_k,
                                                  uint64_t desc_v, const KeyRange& keys, BwdMask& mask, int s,
                                                  const RingPos<Cfg::kStages>& ring, int m, float (&st)[SC / 2],
                                                  float (&dp)[SC / 2]) {
    const int y0 = part.q_col0() * sm90::kPanelBytes;  // this consumer's Q / dO rows in the stage
    sm.q_full(s).wait(ring.parity());
    issue_xyt(st, desc_k, sm.q(s) + y0);     // S^T = K Q^T
    sm.do_full(s).wait(ring.parity());
    issue_xyt(dp, desc_v, sm.dout(s) + y0);  // dP^T = V dO^T
    sm90::wgmma_wait<1>();
    sm90::fence_regs(st);
    mask.query0 = m * BM + part.q_col0();
    const float* lse2 = sm.lse2(s) + part.q_col0();
    if (bwd_block_needs_mask<BM, BN>(t.n_block, m, keys))
      scores_to_p<SC, true>(st, lse2, a.softmax_scale_log2, fc, mask);
    else
      scores_to_p<SC, false>(st, lse2, a.softmax_scale_log2, fc, mask);
    sm90::wgmma_wait<0>();
    sm90::fence_regs(dp);
    dp_to_ds<SC, Cfg::kFault>(st, dp, sm.dpsum(s) + part.q_col0(), fc);
  }

  // The Q-block loop where a consumer holds dK and dV for all of head_dim.
  static __device__ __forceinline__ void loop_in_registers(const BwdArgs& a, const BwdSmem<Cfg>& sm,
                                                           const BwdTile& t, const Part& part, const FragCoord& fc,
                                                           uint64_t desc_k, uint64_t desc_v, const KeyRange& keys,
                                                           BwdMask& mask, float (&dk)[DKV / 2], float (&dv)[DKV / 2]) {
    // One flat loop over the kv group's Q blocks (the query head is only needed
    // for dQ at head_dim 256): a nested loop's extra counter was spilled at hd64.
    const int iters = t.group * (a.num_m_blocks - t.m_begin);
    RingPos<Cfg::kStages> ring;
    for (int m = t.m_begin; int(ring.count) < iters;
         ++ring.count, m = m + 1 < a.num_m_blocks ? m + 1 : t.m_begin) {
      const int s = ring.stage();
      if constexpr (Cfg::kFault == Fa3BwdFault::gqa_not_summed)  // planted: dK, dV restart at each query head
        if (m == t.m_begin) {
#pragma unroll
          for (int i = 0; i < DKV / 2; ++i) dk[i] = dv[i] = 0.f;
        }
      float st[SC / 2], dp[SC / 2];
      p_and_ds(a, sm, t, part, fc, desc_k, desc_v, keys, mask, s, ring, m, st, dp);
      grads_in_registers(sm, part, fc, s, ring.count % Cfg::kDsStages, st, dp, dk, dv);
    }
  }

  // The rest of a Q block where a consumer holds dK and dV for all of head_dim:
  // P^T and dS^T are A fragments already; dS^T also goes to shared memory for dQ,
  // whose task leaves through the dQ warp.
  static __device__ __forceinline__ void grads_in_registers(const BwdSmem<Cfg>& sm, const Part& part,
                                                            const FragCoord& fc, int s, int ds_stage,
                                                            const float (&st)[SC / 2], const float (&dp)[SC / 2],
                                                            float (&dk)[DKV / 2], float (&dv)[DKV / 2]) {
    const int lane = threadIdx.x % 32;
    uint32_t pa[BM / 16][4], dsa[BM / 16][4];
    p_to_a_fragments<Elem, BM>(st, pa);
    p_to_a_fragments<Elem, BM>(dp, dsa);
    store_frag_sw128<BM>(sm.ds(ds_stage), Cfg::kDsPanelBytes, part.key_row0(), 0, dsa, fc);
    issue_ay(dv, pa, sm.dout(s));  // dV += P^T dO
    // Every consumer's dS^T of this block is in shared memory before any dQ GEMM reads it.
    sm90::fence_proxy_async_smem();
    sm90::named_barrier_sync(Cfg::kDsBar, Cfg::kConsumerThreads);
    const int task = part.c;  // one per consumer here
    float dq[32];
    issue_dq(dq, sm, ds_stage, task);  // dQ task = dS K
    sm90::wgmma_wait<1>();             // dV done: dO and P^T are free
    sm90::fence_regs(dv);
    sm90::fence_regs(pa);
    if (lane == 0) sm.do_empty(s).arrive();
    issue_ay(dk, dsa, sm.q(s));  // dK += dS^T Q
    sm90::wgmma_wait<1>();       // dQ done; dK runs under the store below
    sm90::fence_regs(dq);
    sm90::named_barrier_sync(Cfg::kDqEmptyBar + task, Cfg::kDqBarThreads);
    store_dq_task(sm.dq(task), dq, threadIdx.x % 128);
    sm90::fence_proxy_async_smem();
    sm90::named_barrier_arrive(Cfg::kDqFullBar + task, Cfg::kDqBarThreads);
    sm90::wgmma_wait<0>();  // dK done: Q and dS^T are free
    sm90::fence_regs(dk);
    sm90::fence_regs(dsa);
    if (lane == 0) sm.q_empty(s).arrive();
  }

  // The Q-block loop where two consumers split head_dim (kSplitHd): each has P^T
  // and dS^T for half of the queries; both go to their shared tiles, and dV, dK,
  // dQ read them from there. The dQ tasks are added to the accumulator from
  // registers (red.global), in the deterministic mode in n_block order.
  //
  // The first dQ task is issued before dV and dK and added while they run, and
  // the stage is released as soon as dV and dK are done, before the second task
  // is (+5 % at every hd256 point against waiting for all three, then adding
  // the first task with the tensor cores idle). Issuing the next block's S^T
  // behind the second task as well lost 3-5 %: ptxas then serializes the wgmmas
  // (C7514), and with its dP^T too the consumer spills past 240 registers
  // (docs/PERF_NOTES.md fa3-bwd-hd256-overlap).
  static __device__ __forceinline__ void loop_split_hd(const BwdArgs& a, const BwdSmem<Cfg>& sm, const BwdTile& t,
                                                       const Part& part, const FragCoord& fc, uint64_t desc_k,
                                                       uint64_t desc_v, const KeyRange& keys, BwdMask& mask,
                                                       float (&dk)[DKV / 2], float (&dv)[DKV / 2]) {
    static_assert(Cfg::kDqTasksPerWG == 2, "two dQ tasks per consumer");
    const int lane = threadIdx.x % 32, tid = threadIdx.x % 128;
    const bool turn_keeper = threadIdx.x == 128;  // deterministic mode: one consumer thread holds the turn
    const int per_head = a.num_m_blocks - t.m_begin;
    const int iters = t.group * per_head;
    const int panel0 = part.hd_part * (DKV / sm90::kPanelElems);  // this consumer's head_dim panels
    const int task0 = part.c * Cfg::kDqTasksPerWG;
    float st[SC / 2], dp[SC / 2];

    RingPos<Cfg::kStages> ring;
    for (int m = t.m_begin; int(ring.count) < iters; ++ring.count, m = m + 1 < a.num_m_blocks ? m + 1 : t.m_begin) {
      const int s = ring.stage();
      p_and_ds(a, sm, t, part, fc, desc_k, desc_v, keys, mask, s, ring, m, st, dp);
      uint32_t pa[SC / 16][4], dsa[SC / 16][4];
      p_to_a_fragments<Elem, SC>(st, pa);
      p_to_a_fragments<Elem, SC>(dp, dsa);
      // Both consumers' GEMMs of the previous block have read the single P^T / dS^T tiles.
      sm90::named_barrier_sync(Cfg::kPdsFreeBar, Cfg::kConsumerThreads);
      store_frag_sw128<SC>(sm.p(), Cfg::kDsPanelBytes, 0, part.q_col0(), pa, fc);
      store_frag_sw128<SC>(sm.ds(0), Cfg::kDsPanelBytes, 0, part.q_col0(), dsa, fc);
      sm90::fence_proxy_async_smem();
      // Which (batch, head, Q block) this dQ belongs to.
      const int head = t.kv_head * t.group + int(ring.count) / per_head;
      const int64_t blk = row_block(a, t, head, m);
      if (a.deterministic && turn_keeper) wait_turn(a.dq_semaphore + blk, t.n_block);
      __syncwarp();  // bar.sync is .aligned: the warp meets it converged
      sm90::named_barrier_sync(Cfg::kDsBar, Cfg::kConsumerThreads);
      float* dst = a.dq_accum + blk * (BM * HD) + task0 * Cfg::kDqTaskFloats;
      float dq[32];
      issue_dq(dq, sm, 0, task0);                                          // dQ task 1 = dS K
      issue_ay_smem(dv, sm.p(), sm.dout(s) + panel0 * Cfg::kQPanelBytes);  // dV += P^T dO
      issue_ay_smem(dk, sm.ds(0), sm.q(s) + panel0 * Cfg::kQPanelBytes);   // dK += dS^T Q
      sm90::wgmma_wait<2>();  // task 1 done; dV and dK run under its reduce-adds
      sm90::fence_regs(dq);
      add_dq_task(dst, dq, tid);
      issue_dq(dq, sm, 0, task0 + 1);  // dQ task 2
      sm90::wgmma_wait<1>();  // dV and dK done: this stage's Q and dO are free
      sm90::fence_regs(dv);
      sm90::fence_regs(dk);
      if (lane == 0) {
        sm.do_empty(s).arrive();
        sm.q_empty(s).arrive();
      }
      sm90::wgmma_wait<0>();
      sm90::fence_regs(dq);
      add_dq_task(dst + Cfg::kDqTaskFloats, dq, tid);
      if (a.deterministic) {  // both consumers' adds to this Q block are issued: the next tile's turn
        __threadfence();
        sm90::named_barrier_sync(Cfg::kDqDoneBar, Cfg::kConsumerThreads);
        if (turn_keeper) asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(a.dq_semaphore + blk) : "memory");
        __syncwarp();
      }
    }
  }

  // A dQ task (m64n64, fragment order) into the float32 accumulator at dst.
  static __device__ __forceinline__ void add_dq_task(float* dst, const float (&dq)[32], int tid) {
#pragma unroll
    for (int k = 0; k < 8; ++k)
      sm90::red_add_v4(dst + (k * 128 + tid) * 4, make_float4(dq[4 * k], dq[4 * k + 1], dq[4 * k + 2], dq[4 * k + 3]));
  }

  // dK (times the softmax scale) and dV in the dtype, through the K and V tiles'
  // shared memory (no consumer reads them any more) and one TMA store per panel,
  // which leaves out rows past seqlen_k.
  static __device__ __forceinline__ void store_dkdv(const BwdArgs& a, const BwdSmem<Cfg>& sm, const BwdTile& t,
                                                    const Part& part, const FragCoord& fc, float (&dk)[DKV / 2],
                                                    float (&dv)[DKV / 2]) {
    sm90::named_barrier_sync(Cfg::kDsBar, Cfg::kConsumerThreads);  // every GEMM reading K and V is done
#pragma unroll
    for (int i = 0; i < DKV / 2; ++i) dk[i] *= a.softmax_scale;
    {
      const int col0 = part.hd_part * DKV;
      uint32_t packed[DKV / 16][4];
      p_to_a_fragments<Elem, DKV>(dk, packed);
      store_frag_sw128<DKV>(sm.k(), Cfg::kKVPanelBytes, part.key_row0(), col0, packed, fc);
      p_to_a_fragments<Elem, DKV>(dv, packed);
      store_frag_sw128<DKV>(sm.v(), Cfg::kKVPanelBytes, part.key_row0(), col0, packed, fc);
    }
    sm90::fence_proxy_async_smem();
    sm90::named_barrier_sync(Cfg::kDsBar, Cfg::kConsumerThreads);
    if (threadIdx.x == 128) {
      for (int p = 0; p < Cfg::kPanels; ++p) {
        sm90::tma_store_4d(&a.tma_dk, sm.k() + p * Cfg::kKVPanelBytes, p * 64, t.n_block * BN, t.kv_head, t.batch);
        sm90::tma_store_4d(&a.tma_dv, sm.v() + p * Cfg::kKVPanelBytes, p * 64, t.n_block * BN, t.kv_head, t.batch);
      }
      sm90::bulk_commit();
      sm90::bulk_wait_read<0>();  // shared memory must outlive the reads
    }
  }
};

template <typename Elem, typename Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    fa3_bwd_kernel(const __grid_constant__ BwdArgs args) {
#if FA_SM90A_ENABLED
  extern __shared__ uint8_t smem_raw[];
  // Swizzle atoms need 1024-byte alignment; dynamic shared memory only promises 16.
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const BwdSmem<Cfg> sm{smem_raw + ((1024 - (raw & 1023)) & 1023)};
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32;
  const BwdTile tile = bwd_tile_at<Cfg::kBlockM, Cfg::kBlockN>(blockIdx.x, args);

  if (threadIdx.x == 0) {
    sm.kv_full().init(1);
    for (int s = 0; s < Cfg::kStages; ++s) {
      sm.q_full(s).init(1);
      sm.q_empty(s).init(Cfg::kConsumerWarps);
      sm.do_full(s).init(1);
      sm.do_empty(s).init(Cfg::kConsumerWarps);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer warpgroup
    sm90::regs_release<Cfg::kProducerRegs>();
    if (warp == 0) {
      if (threadIdx.x == 0) {
        sm90::tma_prefetch_map(&args.tma_q);
        sm90::tma_prefetch_map(&args.tma_do);
        Fa3Bwd<Elem, Cfg>::producer(args, sm, tile);
      }
    } else if (warp == 1 && Cfg::kDqViaSmem) {
      Fa3Bwd<Elem, Cfg>::dq_writer(args, sm, tile);
    }
  } else {  // consumer warpgroups
    sm90::regs_acquire<Cfg::kConsumerRegs>();
    Fa3Bwd<Elem, Cfg>::consumer(args, sm, tile, wg - 1);
  }
#endif
}

}  // namespace fa::fa3
