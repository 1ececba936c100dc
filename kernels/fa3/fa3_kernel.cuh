// The FA3 forward kernel (sm_90a): one producer warpgroup feeding a K/V ring
// through TMA, and BlockM / 64 consumer warpgroups running wgmma and the online
// softmax. Each block walks the list of (m_block, head, batch) tiles its
// scheduler (fa3_scheduler.cuh) deals it. docs/FA3.md draws the roles, barriers
// and pipeline.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/sm90/arch.cuh"
#include "common/sm90/barrier.cuh"
#include "common/sm90/regs.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/warpgroup.cuh"
#include "common/sm90/wgmma.cuh"
#include "fa3/fa3_args.cuh"
#include "fa3/fa3_o_store.cuh"
#include "fa3/fa3_traits.cuh"
#include "fa3/fa3_softmax.cuh"

namespace fa::fa3 {

// Shared-memory views of one block: tiles and mbarriers at Fa3Traits' offsets.
template <typename Traits>
struct Smem {
  uint8_t* base;
  __device__ uint8_t* q(int slot) const { return base + Traits::kOffQ + slot * Traits::kQBytes; }
  __device__ uint8_t* k(int stage) const { return base + Traits::kOffK + stage * Traits::kKVBytes; }
  __device__ uint8_t* v(int stage) const { return base + Traits::kOffV + stage * Traits::kKVBytes; }
  __device__ sm90::MBarrier* bars() const { return reinterpret_cast<sm90::MBarrier*>(base + Traits::kOffBar); }
  __device__ sm90::MBarrier& full_q(int j) const { return bars()[2 * j]; }       // Q landed in slot j
  __device__ sm90::MBarrier& empty_q(int j) const { return bars()[2 * j + 1]; }  // consumers done with slot j
  static constexpr int kKV = 2 * Traits::kQStages;
  __device__ sm90::MBarrier& full_k(int s) const { return bars()[kKV + 4 * s]; }
  __device__ sm90::MBarrier& empty_k(int s) const { return bars()[kKV + 1 + 4 * s]; }
  __device__ sm90::MBarrier& full_v(int s) const { return bars()[kKV + 2 + 4 * s]; }
  __device__ sm90::MBarrier& empty_v(int s) const { return bars()[kKV + 3 + 4 * s]; }
};

// The block's shared memory at a 1024-byte boundary (swizzle atoms need it;
// dynamic shared memory only promises 16), with its mbarriers initialised by
// thread 0 and visible to every thread before any role starts.
template <typename Traits>
__device__ __forceinline__ Smem<Traits> setup_smem(uint8_t* raw_base) {
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(raw_base));
  const Smem<Traits> sm{raw_base + ((1024 - (raw & 1023)) & 1023)};
  if (threadIdx.x == 0) {
    for (int j = 0; j < Traits::kQStages; ++j) {
      sm.full_q(j).init(1);
      sm.empty_q(j).init(Traits::kConsumerWarps);
    }
    for (int s = 0; s < Traits::kStages; ++s) {
      sm.full_k(s).init(1);
      sm.empty_k(s).init(Traits::kConsumerWarps);
      sm.full_v(s).init(1);
      sm.empty_v(s).init(Traits::kConsumerWarps);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();
  return sm;
}

// Position in the K/V ring: which stage, and the parity of its current lap.
template <int Stages>
struct RingPos {
  uint32_t count = 0;
  __device__ int stage() const { return count % Stages; }
  __device__ uint32_t parity() const { return (count / Stages) & 1; }
};

template <typename Elem, typename Traits>
struct Fa3Fwd {
  static constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, HD = Traits::kHeadDim;
  using Sched = typename Traits::Scheduler;
  static constexpr bool kBf16 = std::is_same_v<Elem, __nv_bfloat16>;

  // Producer: one thread issues every TMA load. Q once per tile, then K and V
  // per block into the ring, each stage reused once the consumers release it.
  static __device__ __forceinline__ void producer(const Args& a, const Smem<Traits>& sm) {
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    const int group = a.heads / a.heads_kv;
    for (int round = 0;; ++round) {
      const int idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
      if (idx >= a.schedule.num_tiles) break;
      const TileCoord tc = Sched::template tile_at<Traits::kFastDivWalk>(idx, a);
      const int n_blocks = kv_blocks<BM, BN>(tc.m_block, a);
      if (n_blocks == 0) continue;  // consumers write O = 0, LSE = -inf without Q
      const int qs = qring.stage();
      sm.empty_q(qs).wait(qring.parity() ^ 1);
      sm.full_q(qs).arrive_expect_tx(Traits::kQBytes);
      for (int p = 0; p < Traits::kPanels; ++p)
        sm90::tma_load_4d(sm.q(qs) + p * Traits::kQPanelBytes, &a.tma_q, &sm.full_q(qs).word, p * 64,
                          tc.m_block * BM, tc.head, tc.batch);
      const int kv_head = tc.head / group;
      for (int i = 0; i < n_blocks; ++i, ++ring.count) {
        const int n = n_blocks - 1 - i;  // last block first: the masked ones come early
        const int s = ring.stage();
        sm.empty_k(s).wait(ring.parity() ^ 1);
        sm.full_k(s).arrive_expect_tx(Traits::kKVBytes);
        for (int p = 0; p < Traits::kPanels; ++p)
          sm90::tma_load_4d(sm.k(s) + p * Traits::kKVPanelBytes, &a.tma_k, &sm.full_k(s).word, p * 64, n * BN,
                            kv_head, tc.batch);
        sm.empty_v(s).wait(ring.parity() ^ 1);
        sm.full_v(s).arrive_expect_tx(Traits::kKVBytes);
        for (int p = 0; p < Traits::kPanels; ++p)
          sm90::tma_load_4d(sm.v(s) + p * Traits::kKVPanelBytes, &a.tma_v, &sm.full_v(s).word, p * 64, n * BN,
                            kv_head, tc.batch);
      }
      ++qring.count;
    }
  }

  // GEMM issue turns between consumer warpgroups (ping-pong): warpgroup c
  // waits on named barrier kTurnBar + c before issuing its GEMMs and, once they
  // are issued, opens the turn of the next one. So while one warpgroup's wgmmas
  // run, the other does its softmax (exp is ~250x slower than the tensor cores).
  static constexpr int kTurnBar = 1;  // ids 1..kConsumerWGs; 0 is __syncthreads
  static __device__ __forceinline__ void wait_turn(int c) {
    if constexpr (Traits::kPingPong) sm90::named_barrier_sync(kTurnBar + c, 256);
  }
  static __device__ __forceinline__ void pass_turn(int c) {
    if constexpr (Traits::kPingPong) sm90::named_barrier_arrive(kTurnBar + (c + 1) % Traits::kConsumerWGs, 256);
  }

  // S = Q K^T for K/V stage s (both operands K-major in shared memory). Issued, not waited.
  static __device__ __forceinline__ void issue_qk(float (&sc)[BN / 2], uint64_t desc_q, const Smem<Traits>& sm, int s) {
    const uint64_t desc_k = sm90::smem_desc_sw128(sm.k(s), 16, 1024);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < HD / 16; ++k) {
      const uint64_t off_q = uint64_t((k / 4) * Traits::kQPanelBytes + (k % 4) * 32) >> 4;
      const uint64_t off_k = uint64_t((k / 4) * Traits::kKVPanelBytes + (k % 4) * 32) >> 4;
      sm90::WgmmaOp<BN>::template ss<kBf16, 0>(sc, desc_q + off_q, desc_k + off_k, k > 0);
    }
    sm90::wgmma_commit();
  }

  // O += P V for stage s (P from registers; V is MN-major: head_dim contiguous). Issued, not waited.
  static __device__ __forceinline__ void issue_pv(float (&o)[HD / 2], uint32_t (&p)[BN / 16][4],
                                                  const Smem<Traits>& sm, int s) {
    const uint64_t desc_v = sm90::smem_desc_sw128(sm.v(s), Traits::kKVPanelBytes, 1024);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
      sm90::WgmmaOp<HD>::template rs<kBf16, 1>(o, p[k], desc_v + (uint64_t(k * 16 * sm90::kPanelBytes) >> 4), 1);
    sm90::wgmma_commit();
  }

  // Blocks 1 .. n_blocks-1 of tile tc (block 0's P is in p): the pairing
  // described below. Shared by both consumers.
  static __device__ __forceinline__ void run_blocks(const Args& a, const Smem<Traits>& sm, int c, int lane,
                                                    const TileCoord& tc, int n_blocks, int qs, uint64_t desc_q,
                                                    int row0, float (&o)[HD / 2], float (&sc)[BN / 2],
                                                    uint32_t (&p)[BN / 16][4], float (&alpha)[2], RowState& st,
                                                    RingPos<Traits::kStages>& ring, int& s_prev, uint32_t& v_parity) {
    for (int i = 1; i < n_blocks; ++i, ++ring.count) {
      const int n = n_blocks - 1 - i;
      const int s = ring.stage();
      sm.full_k(s).wait(ring.parity());
      sm.full_v(s_prev).wait(v_parity);
      wait_turn(c);
      issue_qk(sc, desc_q, sm, s);     // S = Q K_i^T
      rescale_o<HD>(o, alpha);         // O *= exp(m_{i-2} - m_{i-1}), under the Q K^T GEMM
      sm90::fence_regs(o);
      issue_pv(o, p, sm, s_prev);      // O += P_{i-1} V_{i-1}
      pass_turn(c);
      sm90::wgmma_wait<1>();           // S landed; P V may still run
      sm90::fence_regs(sc);
      if (lane == 0) {
        sm.empty_k(s).arrive();
        if (i == n_blocks - 1) sm.empty_q(qs).arrive();
      }
      if (kv_block_needs_mask<BM, BN>(n, tc.m_block, a))
        apply_mask<BN>(sc, n * BN, row0, a.seqlen_q, a.seqlen_k, a.causal);
      online_softmax<BN, 0, Traits::kTreeMax>(sc, st, a.softmax_scale_log2, alpha);
      sm90::wgmma_wait<0>();           // P V landed: O and P_{i-1} free
      sm90::fence_regs(o);
      sm90::fence_regs(p);
      if (lane == 0) sm.empty_v(s_prev).arrive();
      p_to_a_fragments<Elem, BN>(sc, p);
      s_prev = s;
      v_parity = ring.parity();
    }
  }

  // O += P_last V_last, alone, waited for.
  static __device__ __forceinline__ void last_pv(const Smem<Traits>& sm, int c, int lane, float (&o)[HD / 2],
                                                 uint32_t (&p)[BN / 16][4], int s_prev, uint32_t v_parity) {
    sm.full_v(s_prev).wait(v_parity);
    wait_turn(c);
    sm90::fence_regs(o);
    issue_pv(o, p, sm, s_prev);
    pass_turn(c);
    sm90::wgmma_wait<0>();
    sm90::fence_regs(o);
    if (lane == 0) sm.empty_v(s_prev).arrive();
  }

  // Consumer warpgroup c: rows c*64 .. c*64+63 of each tile.
  //
  // Iteration i issues S_i = Q K_i^T and O += P_{i-1} V_{i-1} back to back in
  // one turn and waits for S_i before the softmax, for P V after it. As compiled
  // (SASS, PERF_NOTES fa3-softmax-under-pv) ptxas moves the wait for P V before
  // the softmax, to pack P's conversion into the exponentials: the overlap left
  // is ping-pong's, one warpgroup's softmax under the other's GEMMs; forcing the
  // source order was slower. The rescale of O by exp(m_{i-1} - m_i) that this
  // softmax yields is applied in the next iteration, between the two issues,
  // where it hides under the Q K^T GEMM.
  // Across tiles (Traits::kCrossTile) the same pairing goes on: a tile's last P V is
  // issued with the next tile's first Q K^T in one turn, so only
  // the block's very first Q K^T is waited for alone (what short sequences, with
  // few K/V blocks per tile, pay most for).
  static __device__ __forceinline__ void consumer(const Args& a, const Smem<Traits>& sm, int c) {
    if constexpr (Traits::kSerialBlocks)
      consumer_serial(a, sm, c);
    else if constexpr (Traits::kCrossTile)
      consumer_cross_tile(a, sm, c);
    else
      consumer_per_tile(a, sm, c);
  }

  // Consumer with Traits::kSerialBlocks: per block, S = Q K^T in one turn, the
  // softmax, then O += P V in the next turn, each waited for. Only O and one of S or
  // P are live at a time (192 registers at hd256 with 128 keys, against 224 for the
  // pairing of run_blocks), which lets a tile take 128 keys a block at hd256: half
  // the per-block costs (row reductions, rescale, barriers) of 64-80 keys. The
  // warpgroups take turns strictly (Q K^T of one, then of the other, then P V of
  // one...), so each one's softmax runs under the other's GEMMs.
  static __device__ __forceinline__ void consumer_serial(const Args& a, const Smem<Traits>& sm, int c) {
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    if (Traits::kPingPong && c == Traits::kConsumerWGs - 1) pass_turn(c);
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    for (int round = 0;; ++round) {
      const int idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
      if (idx >= a.schedule.num_tiles) break;
      const TileCoord tc = Sched::template tile_at<Traits::kFastDivWalk>(idx, a);
      const int n_blocks = kv_blocks<BM, BN>(tc.m_block, a);
      const int row0 = tc.m_block * BM + c * 64 + warp * 16 + g;  // this thread's rows: row0, row0 + 8
      float o[HD / 2];
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
      RowState st;
      if (n_blocks > 0) {
        const int qs = qring.stage();
        sm.full_q(qs).wait(qring.parity());
        const uint64_t desc_q = sm90::smem_desc_sw128(sm.q(qs) + c * 64 * sm90::kPanelBytes, 16, 1024);
        for (int i = 0; i < n_blocks; ++i, ++ring.count) {
          const int n = n_blocks - 1 - i;  // last block first, as the producer loads them
          const int s = ring.stage();
          float sc[BN / 2];
          uint32_t p[BN / 16][4];
          float alpha[2];
          sm.full_k(s).wait(ring.parity());
          wait_turn(c);
          issue_qk(sc, desc_q, sm, s);
          pass_turn(c);
          sm90::wgmma_wait<0>();
          sm90::fence_regs(sc);
          if (lane == 0) {
            sm.empty_k(s).arrive();
            if (i == n_blocks - 1) sm.empty_q(qs).arrive();
          }
          if (kv_block_needs_mask<BM, BN>(n, tc.m_block, a)) {
            if (i == 0)
              apply_mask<BN, true>(sc, n * BN, row0, a.seqlen_q, a.seqlen_k, a.causal);
            else
              apply_mask<BN>(sc, n * BN, row0, a.seqlen_q, a.seqlen_k, a.causal);
          }
          online_softmax<BN, 0, Traits::kTreeMax>(sc, st, a.softmax_scale_log2, alpha);
          rescale_o<HD>(o, alpha);  // O = 0 before the first block: harmless
          p_to_a_fragments<Elem, BN>(sc, p);
          sm.full_v(s).wait(ring.parity());
          wait_turn(c);
          sm90::fence_regs(o);
          issue_pv(o, p, sm, s);
          pass_turn(c);
          sm90::wgmma_wait<0>();
          sm90::fence_regs(o);
          sm90::fence_regs(p);
          if (lane == 0) sm.empty_v(s).arrive();
        }
        ++qring.count;
      }
      store_tile(a, tc, o, st, row0, t);
    }
  }

  // Consumer without kCrossTile: each tile's first Q K^T and last P V alone. Kept
  // apart from consumer_cross_tile (they share only run_blocks, which compiles to
  // the same SASS as before): written as one function, the 3-warpgroup hd64 build
  // lost uniform registers in the block loop (+44 instructions per block, -5 % on
  // the H200; PERF_NOTES fa3-cross-tile-pipeline). consumer_serial repeats its walk
  // over the tiles for the same reason: passing both bodies to one walk moved the
  // schedule of the hd64 192x128 loop, 2-5 % slower (PERF_NOTES fa3-shared-tile-walk).
  static __device__ __forceinline__ void consumer_per_tile(const Args& a, const Smem<Traits>& sm, int c) {
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    // The last warpgroup hands the first turn to warpgroup 0.
    if (Traits::kPingPong && c == Traits::kConsumerWGs - 1) pass_turn(c);
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    for (int round = 0;; ++round) {
      const int idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
      if (idx >= a.schedule.num_tiles) break;
      const TileCoord tc = Sched::template tile_at<Traits::kFastDivWalk>(idx, a);
      const int n_blocks = kv_blocks<BM, BN>(tc.m_block, a);
      const int row0 = tc.m_block * BM + c * 64 + warp * 16 + g;  // this thread's rows: row0, row0 + 8
      float o[HD / 2];
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
      RowState st;
      if (n_blocks > 0) {
        const int qs = qring.stage();
        sm.full_q(qs).wait(qring.parity());
        const uint64_t desc_q = sm90::smem_desc_sw128(sm.q(qs) + c * 64 * sm90::kPanelBytes, 16, 1024);
        float sc[BN / 2];
        uint32_t p[BN / 16][4];
        float alpha[2];

        // Block 0 (the last K/V block: the masked one, if any).
        int s_prev = ring.stage();
        sm.full_k(s_prev).wait(ring.parity());
        wait_turn(c);
        issue_qk(sc, desc_q, sm, s_prev);
        pass_turn(c);
        sm90::wgmma_wait<0>();
        sm90::fence_regs(sc);
        if (lane == 0) {
          sm.empty_k(s_prev).arrive();
          if (n_blocks == 1) sm.empty_q(qs).arrive();
        }
        if (kv_block_needs_mask<BM, BN>(n_blocks - 1, tc.m_block, a))
          apply_mask<BN, true>(sc, (n_blocks - 1) * BN, row0, a.seqlen_q, a.seqlen_k, a.causal);
        // alpha is applied to O = 0: harmless
        online_softmax<BN, 0, Traits::kTreeMax>(sc, st, a.softmax_scale_log2, alpha);
        p_to_a_fragments<Elem, BN>(sc, p);
        uint32_t v_parity = ring.parity();
        ++ring.count;

        run_blocks(a, sm, c, lane, tc, n_blocks, qs, desc_q, row0, o, sc, p, alpha, st, ring, s_prev, v_parity);

        rescale_o<HD>(o, alpha);
        last_pv(sm, c, lane, o, p, s_prev, v_parity);
        ++qring.count;
      }
      store_tile(a, tc, o, st, row0, t);
    }
  }

  // Consumer with kCrossTile (see above).
  static __device__ __forceinline__ void consumer_cross_tile(const Args& a, const Smem<Traits>& sm, int c) {
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int row_in_tile = c * 64 + warp * 16 + g;  // this thread's rows: +0 and +8
    // The last warpgroup hands the first turn to warpgroup 0.
    if (Traits::kPingPong && c == Traits::kConsumerWGs - 1) pass_turn(c);
    // Tiles whose rows see no key, while the first Q and K are on their way. The
    // walk over the block's tiles costs each consumer warp ~136 instructions per
    // tile before its first GEMM (ncu, hd64 causal 512), so it is skipped where no
    // row can be empty (Traits::kSkipNeedlessEmptyWalk says where).
    if (!Traits::kSkipNeedlessEmptyWalk || some_rows_see_no_key(a)) store_empty_tiles(a);
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    int round = 0;
    // Moves to the block's next tile with at least one K/V block; tiles without
    // any (causal, rows that see no key) were stored above.
    TileCoord tc;
    int n_blocks = 0, idx = 0;
    auto next_tile = [&]() {
      for (;;) {
        idx = Sched::tile_index(round++, gridDim.x, blockIdx.x);
        if (idx >= a.schedule.num_tiles) return false;
        tc = Sched::template tile_at<Traits::kFastDivWalk>(idx, a);
        n_blocks = kv_blocks<BM, BN>(tc.m_block, a);
        if (n_blocks > 0) return true;
      }
    };
    if (!next_tile()) return;

    float o[HD / 2];
    float sc[BN / 2];
    uint32_t p[BN / 16][4];
    float alpha[2];
    RowState st;
    auto q_desc = [&](int qs) {
      return sm90::smem_desc_sw128(sm.q(qs) + c * 64 * sm90::kPanelBytes, 16, 1024);
    };
    // Softmax of tile tc's block 0 (its last K/V block: the masked one, if any),
    // whose S has landed in sc from K/V stage s; Q slot qs.
    auto first_softmax = [&](int s, int qs, RowState& rs) {
      if (lane == 0) {
        sm.empty_k(s).arrive();
        if (n_blocks == 1) sm.empty_q(qs).arrive();
      }
      if (kv_block_needs_mask<BM, BN>(n_blocks - 1, tc.m_block, a))
        apply_mask<BN, true>(sc, (n_blocks - 1) * BN, tc.m_block * BM + row_in_tile, a.seqlen_q, a.seqlen_k,
                             a.causal);
      // alpha is applied to O = 0: harmless
      online_softmax<BN, 0, Traits::kTreeMax>(sc, rs, a.softmax_scale_log2, alpha);
    };
    // Tile tc's block 0 with nothing to overlap its Q K^T with: the block's first tile.
    int s_prev = 0;
    uint32_t v_parity = 0;
    auto start_tile_alone = [&]() {
      const int qs = qring.stage();
      sm.full_q(qs).wait(qring.parity());
      s_prev = ring.stage();
      sm.full_k(s_prev).wait(ring.parity());
      wait_turn(c);
      issue_qk(sc, q_desc(qs), sm, s_prev);
      pass_turn(c);
      sm90::wgmma_wait<0>();
      sm90::fence_regs(sc);
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
      st = RowState{};
      first_softmax(s_prev, qs, st);
      p_to_a_fragments<Elem, BN>(sc, p);
      v_parity = ring.parity();
      ++ring.count;
    };
    start_tile_alone();

    for (;;) {
      // Tile tc: block 0's P is in p; blocks 1 .. n_blocks-1 here. The Q slot and
      // its descriptor are constants of the tile (recomputed from the ring, not
      // carried from the step that waited for them, so they stay uniform values).
      const int qs = qring.stage();
      const uint64_t desc_q = q_desc(qs);
      const int row0 = tc.m_block * BM + row_in_tile;  // this thread's rows: row0, row0 + 8
      run_blocks(a, sm, c, lane, tc, n_blocks, qs, desc_q, row0, o, sc, p, alpha, st, ring, s_prev, v_parity);
      // O += P_last V_last: issued together with the next tile's first Q K^T, whose
      // softmax then runs under it, or alone after the block's last tile.
      rescale_o<HD>(o, alpha);
      ++qring.count;
      // The finished tile, kept as its index alone (registers are tightest in the
      // step below, with two tiles' state live): its coordinates are recomputed to store it.
      const int done = idx;
      auto store_done = [&]() {
        const TileCoord d = Sched::template tile_at<Traits::kFastDivWalk>(done, a);
        store_tile(a, d, o, st, d.m_block * BM + row_in_tile, t);
      };
      if (!next_tile()) {
        last_pv(sm, c, lane, o, p, s_prev, v_parity);
        store_done();
        return;
      }
      const int next_qs = qring.stage();
      sm.full_q(next_qs).wait(qring.parity());
      const int s = ring.stage();
      sm.full_k(s).wait(ring.parity());
      sm.full_v(s_prev).wait(v_parity);
      wait_turn(c);
      issue_qk(sc, q_desc(next_qs), sm, s);  // next tile: S = Q K_0^T
      sm90::fence_regs(o);
      issue_pv(o, p, sm, s_prev);            // this tile: O += P_last V_last
      pass_turn(c);
      sm90::wgmma_wait<1>();
      sm90::fence_regs(sc);
      RowState next_st;
      first_softmax(s, next_qs, next_st);
      sm90::wgmma_wait<0>();
      sm90::fence_regs(o);
      sm90::fence_regs(p);
      if (lane == 0) sm.empty_v(s_prev).arrive();
      p_to_a_fragments<Elem, BN>(sc, p);  // before the store: P packed takes half S's registers
      store_done();
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
      st = next_st;
      s_prev = s;
      v_parity = ring.parity();
      ++ring.count;
    }
  }

  // Tiles whose rows see no key (causal, seqlen_q > seqlen_k): O = 0, LSE = -inf,
  // stored by the consumers before their first tile, so the tile walk between two
  // tiles' GEMMs carries no store code (it cost registers there). Rows past
  // seqlen_q are not written.
  static __device__ __forceinline__ void store_empty_tiles(const Args& a) {
    // Rows of consumer thread threadIdx.x (warpgroup 0 is the producer), recomputed
    // here rather than kept live through the tile loop.
    const int row_in_tile = (threadIdx.x - 128) / 32 * 16 + (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    for (int round = 0;; ++round) {
      const int idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
      if (idx >= a.schedule.num_tiles) break;
      const TileCoord tc = Sched::template tile_at<Traits::kFastDivWalk>(idx, a);
      if (kv_blocks<BM, BN>(tc.m_block, a) > 0) continue;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = tc.m_block * BM + row_in_tile + 8 * r;
        if (row >= a.seqlen_q) continue;
        Elem* out = static_cast<Elem*>(a.o) + tc.batch * a.o_batch_stride + row * a.o_row_stride +
                    tc.head * a.o_head_stride;
#pragma unroll
        for (int j = 0; j < HD / 8; ++j) *reinterpret_cast<uint32_t*>(out + 8 * j + 2 * t) = 0u;
        if (t == 0) a.lse[(int64_t(tc.batch) * a.heads + tc.head) * a.seqlen_q + row] = -INFINITY;
      }
    }
  }

  // O = O / l in the output dtype, LSE = m * scale + ln(l); a row that saw no
  // key gets O = 0 and LSE = -inf. Rows past seqlen_q are not written. O leaves in
  // 16-byte stores (fa3_o_store.cuh says why; the loop is here, not in
  // store_o_row, for the SASS it gives).
  static __device__ __forceinline__ void store_tile(const Args& a, const TileCoord& tc, float (&o)[HD / 2],
                                                    const RowState& st, int row0, int t) {
    // Row row0's O and LSE addresses, once: row0 + 8 is 8 row strides on (the
    // 64-bit products per row were ~20 instructions of the step between tiles).
    Elem* const out0 = static_cast<Elem*>(a.o) + tc.batch * a.o_batch_stride + row0 * a.o_row_stride +
                       tc.head * a.o_head_stride;
    float* const lse0 = a.lse + (int64_t(tc.batch) * a.heads + tc.head) * a.seqlen_q + row0;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      const float l = quad_sum(st.l[r]);  // >= 1 when > 0: the row's maximum adds exp(0)
      // __frcp_rn is 1 / l correctly rounded, the value '1.f / l' gives, without
      // the division's slow-path call; __logf (MUFU.LG2) is within 2^-21 of ln l
      // here, against an LSE tolerance of 1e-3. Per tile, so it counts where tiles
      // hold few K/V blocks (PERF_NOTES fa3-short-epilogue-math).
      const float inv = l > 0.f ? __frcp_rn(l) : 0.f;
      Elem* const out = out0 + 8 * r * a.o_row_stride;
#pragma unroll
      for (int q = 0; q < HD / 32; ++q) {
        uint32_t v[4];
        pack_o_chunks<Elem, HD>(v, o, r, q, inv);
        const uint4 w = quad_transpose(v, t);  // every lane: the shuffles need the whole warp
        // st.global.v4 in PTX: written as a uint4 store, ptxas split the first
        // chunk of each row back into four 4-byte STGs (SASS at 5fbab10).
        if (row < a.seqlen_q)
          asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(out + 32 * q + 8 * t), "r"(w.x),
                       "r"(w.y), "r"(w.z), "r"(w.w)
                       : "memory");
      }
      if (row >= a.seqlen_q) continue;
      if (t == 0) lse0[8 * r] = l > 0.f ? st.m[r] * a.softmax_scale + __logf(l) : -INFINITY;
    }
  }
};

template <typename Elem, typename Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1) fa3_fwd_kernel(const __grid_constant__ Args args) {
#if FA_SM90A_ENABLED
  extern __shared__ uint8_t smem_raw[];
  const Smem<Traits> sm = setup_smem<Traits>(smem_raw);
  const int wg = Traits::kUniformWarpgroupIndex ? sm90::warpgroup_index() : int(threadIdx.x / 128);

  if (wg == 0) {  // producer warpgroup
    sm90::regs_release<Traits::kProducerRegs>();
    if (threadIdx.x == 0) {
      sm90::tma_prefetch_map(&args.tma_q);
      sm90::tma_prefetch_map(&args.tma_k);
      sm90::tma_prefetch_map(&args.tma_v);
      Fa3Fwd<Elem, Traits>::producer(args, sm);
    }
  } else {  // consumer warpgroups
    sm90::regs_acquire<Traits::kConsumerRegs>();
    Fa3Fwd<Elem, Traits>::consumer(args, sm, wg - 1);
  }
#endif
}

}  // namespace fa::fa3
