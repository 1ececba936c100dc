// The FP8 (e4m3) FA3 forward kernel (sm_90a) and the V^T pre-pass it reads
// (or, Traits::kTransposeV, its own transpose of V in shared memory).
//
// Data flow:
//   transpose_v_kernel   V [b, seqlen_k, h_kv, d] codes -> V^T [b, h_kv, d, seqlen_vt]
//                        (seqlen_vt = seqlen_k rounded up to 64, zeros past
//                        seqlen_k), keys permuted inside each group of 32 by
//                        e4m3_key_order (wgmma_fp8.cuh). wgmma reads 8-bit
//                        operands K-major only, and P V's k is the key.
//   fa3_fp8_fwd_kernel   producer warpgroup: one thread issues TMA loads of Q
//                        (once per tile) and of K and V^T blocks into a ring
//                        (full/empty mbarriers, as the bf16 kernel). With
//                        Traits::kShareVt and Fp8Args::vt_sync (the registry's
//                        hd128 tile past the in-kernel lengths, fp8_check's
//                        vs) there is no pre-pass either: the other three
//                        warps make V^T blocks by TMA both ways off the
//                        launch's queue (vt_team, fa3_fp8_vt_tasks.h), and
//                        the TMA thread waits for each V^T block's count. With
//                        Traits::kTransposeV there is no pre-pass: TMA loads
//                        V's rows into a staging ring and the producer's other
//                        three warps transpose each block into the V^T ring
//                        (transpose_block), in the same key order.
//                        2 or 3 consumer warpgroups, 64 query rows each:
//                          S = Q K^T             wgmma e4m3, both from shared memory, f32
//                          online softmax on S   scale = softmax_scale * q_descale * k_descale
//                          P -> e4m3 registers   values in [0, 1], no scale (e4m3 max 448)
//                          O += P V              wgmma e4m3, P from registers, V^T from shared
//                          O = O * v_descale / l in bf16, LSE = m * scale + ln l
//                        with the bf16 kernel's ping-pong between the
//                        warpgroups and its pairing of S_i = Q K_i^T with
//                        P_{i-1} V_{i-1} in one turn (fa3_kernel.cuh: as
//                        compiled, both are waited for before the softmax).
// P keeps the S accumulator's register order: thread (g, t) packs its own
// columns into the A fragment, so A's k index kk holds key e4m3_key_order(kk) of
// the block, and V^T was written in that key order. Descales come from
// Fp8Descale, per tensor or per (batch, head): read once per tile. With
// descales per block of rows (kBlocks, its own instance) Q's is read once per
// tile by each warpgroup for its 64 rows, K's and V's once per K/V block: the running max is kept scaled, and
// O is accumulated in units of the latest block's V descale, each block's alpha
// carrying the ratio of the previous block's V descale to its own, the epilogue
// multiplying by the last block's. Without blocks the kernel keeps the simpler
// per-tile form: computing per block there cost 5-9 % at hd128 and hd256
// (PERF_NOTES fa3-fp8-block-scaling).
#pragma once
#include <cstdint>

#include <cuda_bf16.h>

#include "common/sm90/arch.cuh"
#include "common/sm90/barrier.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/griddep.cuh"
#include "common/mma_sm80.cuh"  // smem_addr, ldmatrix_x4_trans
#include "common/sm90/regs.cuh"
#include "common/sm90/stmatrix.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/warpgroup.cuh"
#include "common/sm90/wgmma.cuh"
#include "common/sm90/wgmma_fp8.cuh"
#include "fa3/fa3_fp8_args.cuh"
#include "fa3/fa3_fp8_defaults.h"
#include "fa3/fa3_fp8_traits.cuh"
#include "fa3/fa3_fp8_vt_tasks.cuh"
#include "fa3/fa3_kernel.cuh"  // Smem, setup_smem, RingPos
#include "fa3/fa3_o_store.cuh"
#include "fa3/fa3_softmax.cuh"

namespace fa::fa3 {

// --- V^T pre-pass ---------------------------------------------------------
constexpr int kVtThreads = 256;  // threads per pre-pass block

// One block: kFp8VtKeys keys (fa3_fp8_defaults.h) x head_dim of one (batch, kv
// head), through shared memory. Reads 16-byte chunks of V's rows; each thread
// then takes four 4 x 4 byte squares (16 keys, 4 head_dim rows), reads each as 4
// words and transposes it (vt_square_transpose), and writes 16 bytes of each of
// its 4 V^T rows. (Byte loads, one per key, made the pass 2.4x slower than its
// memory traffic; 4-byte stores left it 16 % slower than a copy of as many bytes
// where L2 holds no dirty lines: PERF_NOTES fa3-fp8-vt-pass,
// fa3-fp8-vt-pass-wide.) The attention kernel after it may launch as soon as
// every block has started (griddep.cuh). Strides in bytes (= elements). A
// template only so that the header may be included by several translation units.
template <int Keys = kFp8VtKeys>
__global__ void __launch_bounds__(kVtThreads) transpose_v_kernel(const uint8_t* __restrict__ v, uint8_t* __restrict__ vt,
                                                          int seqlen_k, int seqlen_vt, int heads_kv, int head_dim,
                                                          int64_t v_batch_stride, int64_t v_row_stride,
                                                          int64_t v_head_stride, unsigned* zero, int n_zero) {
  static_assert(Keys % 32 == 0, "e4m3_key_order permutes keys within groups of 32");
  sm90::griddep_launch_dependents();  // its blocks cannot share an SM with ours: they start as SMs drain
  if (blockIdx.x + blockIdx.y + blockIdx.z == 0)  // the attention kernel's split counts (fa3_fp8_fwd.cuh)
    for (int i = threadIdx.x; i < n_zero; i += kVtThreads) zero[i] = 0;
  __shared__ __align__(16) uint8_t tile[Keys][256];
  const int key0 = blockIdx.x * Keys, h = blockIdx.y, b = blockIdx.z;
  const uint8_t* src = v + b * v_batch_stride + h * v_head_stride;
  const int chunks = head_dim / 16;
  // Every load of the thread issued before the first is stored: one memory latency
  // per block, not one per chunk.
  constexpr int kLoads = Keys * 16 / kVtThreads;  // 16-byte chunks of 256-byte rows per thread
  uint4 x[kLoads];
#pragma unroll
  for (int k = 0; k < kLoads; ++k) {
    const int i = threadIdx.x + k * kVtThreads, r = i / chunks;
    x[k] = make_uint4(0, 0, 0, 0);
    if (i < Keys * chunks && key0 + r < seqlen_k)
      x[k] = *reinterpret_cast<const uint4*>(src + (key0 + r) * v_row_stride + 16 * (i % chunks));
  }
#pragma unroll
  for (int k = 0; k < kLoads; ++k) {
    const int i = threadIdx.x + k * kVtThreads, r = i / chunks;
    if (i < Keys * chunks) *reinterpret_cast<uint4*>(&tile[r][16 * vt_tile_chunk(r, i % chunks, chunks)]) = x[k];
  }
  __syncthreads();
  uint8_t* dst = vt + ((int64_t(b) * heads_kv + h) * head_dim) * seqlen_vt + key0;
  constexpr int kChunksOut = Keys / 16;  // 16-byte chunks per V^T row in this block
  for (int i = threadIdx.x; i < head_dim / 4 * kChunksOut; i += kVtThreads) {
    const int c = i % kChunksOut, q = i / kChunksOut;  // keys 16c .. 16c+15; head_dim rows 4q .. 4q+3
    uint32_t out[4][4];                                // out[k][u]: word 4c + u of V^T row 4q + k
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int w = 4 * c + u;
      uint32_t a[4];  // a[j]: head_dim 4q .. 4q+3 of key e4m3_key_order(4w + j)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = sm90::e4m3_key_order(4 * w + j);
        a[j] = *reinterpret_cast<const uint32_t*>(&tile[r][16 * vt_tile_chunk(r, q / 4, chunks) + 4 * (q % 4)]);
      }
      uint32_t o[4];
      vt_square_transpose(a, o);
#pragma unroll
      for (int k = 0; k < 4; ++k) out[k][u] = o[k];
    }
#pragma unroll
    for (int k = 0; k < 4; ++k)
      *reinterpret_cast<uint4*>(dst + int64_t(4 * q + k) * seqlen_vt + 16 * c) =
          make_uint4(out[k][0], out[k][1], out[k][2], out[k][3]);
  }
}

// Which S accumulator element (index into the thread's BlockN / 2 floats) goes
// to byte `byte` of register r of P's A fragment for k32 step k: step k covers
// accumulator blocks j = 4k .. 4k+3 (elements 16k .. 16k+15); register r holds
// row g + 8 (r % 2) and k indices 16 (r / 2) + 4t + byte, filled from the same
// thread's columns 16 (r / 2) + 8 (byte / 2) + 2t + byte % 2 (e4m3_key_order).
__host__ __device__ constexpr int p_src_index(int k, int r, int byte) {
  return 16 * k + 8 * (r / 2) + 2 * (r % 2) + 4 * (byte / 2) + byte % 2;
}

// --- The attention kernel ---------------------------------------------------
template <typename Traits, bool kBlocks>
struct Fa3Fp8Fwd {
  static constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, HD = Traits::kHeadDim;
  using Sched = typename Traits::Scheduler;
  static constexpr bool kSerialPvQk = Traits::kSerialPvQk;

  // Producer: one thread issues every TMA load; Q once per tile, then K and V^T
  // (kTransposeV: V's rows, into the staging ring) per block, each stage reused
  // once the consumers (the transposing warps) release it.
  static __device__ __forceinline__ void producer(const Fp8Args& a, const Smem<Traits>& sm) {
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    const int group = a.heads / a.heads_kv;
    if (Traits::kShareVt && a.vt_sync) *vt_ready(sm) = 0;
    bool pre_pass_done = false;  // griddep.cuh: Q and K may load before the pre-pass ends, V^T not
    for (int round = 0;; ++round) {
      const int idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
      if (idx >= a.num_items) break;
      const Fp8Item item = fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(idx, a);
      const TileCoord& tc = item.tc;
      const int n_blocks = item.hi - item.lo;
      if (n_blocks == 0) continue;  // consumers write O = 0, LSE = -inf without Q
      const int qs = qring.stage();
      sm.empty_q(qs).wait(qring.parity() ^ 1);
      sm.full_q(qs).arrive_expect_tx(Traits::kQBytes);
      for (int p = 0; p < Traits::kQKPanels; ++p)
        sm90::tma_load_4d(sm.q(qs) + p * Traits::kQPanelBytes, &a.tma_q, &sm.full_q(qs).word,
                          p * Traits::kQKPanelW, fp8_tile_row0<BM>(tc.m_block, a), tc.head, tc.batch);
      const int kv_head = tc.head / group;
      for (int i = 0; i < n_blocks; ++i, ++ring.count) {
        const int n = item.hi - 1 - i;  // last block first: the masked ones come early
        const int s = ring.stage();
        sm.empty_k(s).wait(ring.parity() ^ 1);
        sm.full_k(s).arrive_expect_tx(Traits::kKVBytes);
        for (int p = 0; p < Traits::kQKPanels; ++p)
          sm90::tma_load_4d(sm.k(s) + p * Traits::kKPanelBytes, &a.tma_k, &sm.full_k(s).word,
                            p * Traits::kQKPanelW, n * BN, kv_head, tc.batch);
        if constexpr (Traits::kTransposeV) {  // V's rows, as K's, for the transposing warps
          empty_v_rows(sm, s).wait(ring.parity() ^ 1);
          full_v_rows(sm, s).arrive_expect_tx(Traits::kKVBytes);
          for (int p = 0; p < Traits::kQKPanels; ++p)
            sm90::tma_load_4d(v_rows(sm, s) + p * Traits::kKPanelBytes, &a.tma_v, &full_v_rows(sm, s).word,
                              p * Traits::kQKPanelW, n * BN, kv_head, tc.batch);
        } else {
          // V^T: the pre-pass's (launched early); where V^T is shared, the
          // counts below say which blocks are made (a maker kernel may still run).
          if (!pre_pass_done) {
            if (!(Traits::kShareVt && a.vt_sync)) sm90::griddep_wait();
            pre_pass_done = true;
          }
          if constexpr (Traits::kShareVt)
            if (a.vt_sync && !*vt_ready(sm) && wait_vt_block(a, tc.batch * a.heads_kv + kv_head, n))
              *vt_ready(sm) = 1;
          sm.empty_v(s).wait(ring.parity() ^ 1);
          sm.full_v(s).arrive_expect_tx(Traits::kKVBytes);
          for (int p = 0; p < Traits::kVPanels; ++p)  // V^T: keys along the row, head_dim rows
            sm90::tma_load_4d(sm.v(s) + p * Traits::kVPanelBytes, &a.tma_vt, &sm.full_v(s).word,
                              n * BN + p * Traits::kVPanelW, 0, kv_head, tc.batch);
        }
      }
      ++qring.count;
    }
    if constexpr (Traits::kTransposeV) end_v_rows(sm, ring);
  }

  // Whether every V^T block of the launch is written (Fp8Args::vt_sync): the
  // TMA thread's own note, so that it stops asking (fa3_fp8_vt_tasks.cuh).
  static __device__ __forceinline__ volatile uint32_t* vt_ready(const Smem<Traits>& sm) {
    return reinterpret_cast<volatile uint32_t*>(sm.base + Traits::kOffVtStage + Traits::kVtReadyOffset);
  }

  // --- V^T made by the producer warps, shared (Traits::kVtWarps, Fp8Args::vt_sync) ---
  // Warps 1..3 as one team take V^T blocks off the launch's queue
  // (fa3_fp8_vt_tasks.h, one task per key block, taken by an atomic counter)
  // and make each by TMA both ways through a stage of V rows and one of V^T:
  // the team's first thread takes a block and loads its rows (the in-kernel
  // transpose's map), the three warps transpose them as the in-kernel
  // transpose does (transpose_units), and the first thread stores the V^T stage
  // with V^T's map (the inverse of the TMA thread's V^T load), takes and loads
  // its next block, and counts the stored one once its store is complete. Each
  // block once per launch, not once per tile. A block's TMA thread may wait for
  // a V^T block another block makes; since only running blocks take blocks off
  // the queue and a team waits on nothing but its own copies, every block taken
  // is finished and every block not yet taken is taken by a running team (its
  // own at least): the launch needs no more than one block resident (an SM
  // limit or other work on the GPU slows it, never hangs it).
  static __device__ __forceinline__ uint8_t* vt_rows_stage(const Smem<Traits>& sm) {
    return sm.base + Traits::kOffVtStage;
  }
  static __device__ __forceinline__ uint8_t* vt_out_stage(const Smem<Traits>& sm) {
    return sm.base + Traits::kOffVtStage + Traits::kKVBytes;
  }
  static __device__ __forceinline__ volatile uint32_t* vt_team_end(const Smem<Traits>& sm) {
    return reinterpret_cast<volatile uint32_t*>(sm.base + Traits::kOffVtStage + Traits::kVtEndOffset);
  }
  static __device__ __forceinline__ sm90::MBarrier& vt_rows_full(const Smem<Traits>& sm) {
    return *reinterpret_cast<sm90::MBarrier*>(sm.base + Traits::kOffVtStage + Traits::kVtBarOffset);
  }

  // A whole V^T block's two TMA steps, the team's and the maker kernel's
  // (fa3_fp8_vt_maker.cuh): task's V rows into `rows` (laid out as a K stage,
  // the in-kernel transpose's map), `bar` expecting their bytes; and the V^T
  // stage at `vt` stored with V^T's map (the inverse of the TMA thread's V^T
  // load), not yet committed.
  static __device__ __forceinline__ void load_vt_rows(const Fp8Args& a, const Fp8VtTask& task, uint8_t* rows,
                                                      sm90::MBarrier& bar) {
    const int b = task.pair / a.heads_kv;
    bar.arrive_expect_tx(Traits::kKVBytes);
    for (int p = 0; p < Traits::kQKPanels; ++p)
      sm90::tma_load_4d(rows + p * Traits::kKPanelBytes, &a.tma_v, &bar.word, p * Traits::kQKPanelW, task.block * BN,
                        task.pair - b * a.heads_kv, b);
  }
  static __device__ __forceinline__ void store_vt(const Fp8Args& a, const Fp8VtTask& task, const uint8_t* vt) {
    const int b = task.pair / a.heads_kv;
    for (int p = 0; p < Traits::kVPanels; ++p)
      sm90::tma_store_4d(&a.tma_vt, vt + p * Traits::kVPanelBytes, task.block * BN + p * Traits::kVPanelW, 0,
                         task.pair - b * a.heads_kv, b);
  }

  // The team's first thread: take the queue's next block and request its rows
  // into the rows stage; or, past the queue's end, set the end word and
  // complete the barrier with no bytes. The queue's length and each task are
  // computed where used, not kept: the producer warps hold 32 registers, and a
  // value kept live across the team's loop spilled.
  static __device__ __forceinline__ int vt_take(const Fp8Args& a, const Smem<Traits>& sm) {
    const int t = int(atomicAdd(a.vt_sync + kVtQueueWord, 1u));
    if (t >= a.batch * a.heads_kv * a.vt_blocks) {
      *vt_team_end(sm) = 1;
      vt_rows_full(sm).arrive();  // release: the end word is visible to the waiters
      return -1;
    }
    load_vt_rows(a, vt_block_task(a, t, a.batch * a.heads_kv), vt_rows_stage(sm), vt_rows_full(sm));
    return t;
  }

  static __device__ __forceinline__ void vt_team(const Fp8Args& a, const Smem<Traits>& sm) {
    const int tw = threadIdx.x / 32 - 1;
    const bool lead = threadIdx.x == 32;
    const TransposeLane lane(tw);
    const uint32_t sel_lo = transpose_selector();
    int t = lead ? vt_take(a, sm) : -1;  // the lead's block in the rows stage
    for (uint32_t it = 0;; ++it) {
      vt_rows_full(sm).wait(it & 1);
      if (*vt_team_end(sm)) break;
      transpose_units(smem_addr(vt_rows_stage(sm)), smem_addr(vt_out_stage(sm)), lane, tw, sel_lo);
      sm90::fence_proxy_async_smem();  // the V^T stage, visible to the TMA store
      sm90::named_barrier_sync(kTransposeBar, kTransposeThreads);  // and the rows stage read
      if (lead) {
        const int stored = t;
        store_vt(a, vt_block_task(a, stored, a.batch * a.heads_kv), vt_out_stage(sm));
        sm90::bulk_commit();
        sm90::bulk_wait_read<0>();  // the V^T stage may be written again
        t = vt_take(a, sm);         // the next block's rows in flight during the wait below
        sm90::bulk_wait<0>();       // the stored block is written
        vt_block_done(a, vt_block_task(a, stored, a.batch * a.heads_kv));
      }
    }
  }

  // --- In-kernel V transpose (Traits::kTransposeV) ---------------------------
  // Staging stage s of V's rows (laid out as K's), the barrier its TMA completes,
  // and the one the transposing warps release it by.
  static __device__ __forceinline__ uint8_t* v_rows(const Smem<Traits>& sm, int s) {
    return sm.base + Traits::kOffVRows + s * Traits::kKVBytes;
  }
  static __device__ __forceinline__ sm90::MBarrier& full_v_rows(const Smem<Traits>& sm, int s) {
    return sm.bars()[2 * Traits::kQStages + 4 * Traits::kStages + 2 * s];
  }
  static __device__ __forceinline__ sm90::MBarrier& empty_v_rows(const Smem<Traits>& sm, int s) {
    return sm.bars()[2 * Traits::kQStages + 4 * Traits::kStages + 2 * s + 1];
  }
  static constexpr int kTransposeBar = 4;      // named barrier of the transposing warps (turns: 1..3)
  static constexpr int kTransposeThreads = 96;  // producer warps 1..3; warp 0 issues the TMA loads

  // How many V row blocks the producer issued, set once it has issued the last:
  // until then ~0u.
  static __device__ __forceinline__ volatile uint32_t* v_rows_end(const Smem<Traits>& sm) {
    return reinterpret_cast<volatile uint32_t*>(&sm.bars()[2 * Traits::kQStages + 4 * Traits::kStages +
                                                           2 * Traits::kVRowStages]);
  }

  // Producer warps 1..3: V row blocks in the ring's order, until the stage they
  // wait for is the producer's end mark (end_v_rows). Their loop holds a block
  // count and the lane's offsets (TransposeLane) only: the tile walk beside the
  // transpose spilled at 24 registers.
  static __device__ __forceinline__ void transposer(const Smem<Traits>& sm) {
    const TransposeLane lane(threadIdx.x / 32 - 1);
    for (uint32_t count = 0;; ++count) {
      const int s = count % Traits::kStages;
      const uint32_t parity = (count / Traits::kStages) & 1;
      full_v_rows(sm, s).wait(parity);
      if (*v_rows_end(sm) == count) break;
      transpose_block(sm, lane, s, parity);
    }
  }

  // After the producer's last block: the next stage's full barrier completes
  // with no bytes, and the count says it holds none.
  static __device__ __forceinline__ void end_v_rows(const Smem<Traits>& sm, const RingPos<Traits::kStages>& ring) {
    const int s = ring.stage();
    empty_v_rows(sm, s).wait(ring.parity() ^ 1);
    *v_rows_end(sm) = ring.count;
    full_v_rows(sm, s).arrive();  // release: the count is visible to the waiters
  }

  // V rows of ring stage s (landed) -> V^T stage s, keys in e4m3_key_order. V's
  // bytes read as 16-bit pairs along head_dim: an ldmatrix .trans of 8 keys x 16
  // bytes gives thread (g, t) keys 2t, 2t+1 of head_dim 2g, 2g+1; with the same
  // from keys 8..15, one byte permute makes V^T row 2g's word t (keys 2t, 2t+1,
  // 8+2t, 9+2t: e4m3_key_order) and another row 2g+1's, and stmatrix stores
  // them. Threads g >= 4 swap which of their two rows goes to which matrix, so
  // that each stored matrix's 8 rows cover every row mod 8, every 16-byte bank
  // group under the 128B swizzle. A unit is (16-key group kg, pair of 16-byte
  // head_dim chunks c0, c0 + 1).
  //
  // Lane (m, i) = (lane / 8, lane % 8) addresses row i of matrix m: to load, key
  // 16 kg + 8 (m % 2) + i, head_dim chunk c0 + m / 2 (the swizzle XORs the chunk
  // with i (128B) or (i / 2) % 4 (64B), the same for every kg); to store, V^T row
  // d = 16 (c0 + m / 2) + 2 i + e (e: the g >= 4 swap), key group kg's chunk XOR
  // d % 8.
  //
  // Two forms. With 32 producer registers (three consumer warpgroups: hd128's
  // default tile) warp w takes the groups kg = w + 3 j, every unit unrolled, and
  // the lane keeps each unit's offsets but the immediates (TransposeLane), so a
  // unit is one ldmatrix, four byte permutes and one stmatrix. The warps issue
  // from the SM sub-partitions the consumers run on, and the loop form (31
  // instructions a unit, about 390 per warp and block at hd128) cost the kernel
  // 12 % more cycles at hd128 non-causal 4096 (PERF_NOTES
  // fa3-fp8-vt-in-kernel-profile, fa3-fp8-vt-unrolled). At 24 registers (hd64,
  // hd256, hd128's two-warpgroup tile) the unrolled form spilled (ptxas), so
  // those tiles keep the loop: the three warps take every third unit.
  static constexpr bool kVtUnrolled = Traits::kProducerRegs >= 32;
  static constexpr int kVtGroups = BN / 16;                     // 16-key groups per block
  static constexpr int kVtGroupsPerWarp = (kVtGroups + 2) / 3;  // j's range (unrolled form)
  static constexpr int kVtChunks = Traits::kQKPanelW / 16;      // 16-byte chunks of a V row panel
  static constexpr int kVtChunkPairs = kVtChunks / 2;           // distinct swizzled load offsets

  struct TransposeLane {  // the unrolled form's offsets, without the ring stage
    uint32_t ld[kVtUnrolled ? kVtChunkPairs : 1];    // chunk pair x's, with this warp's first group
    uint32_t st[kVtUnrolled ? kVtGroupsPerWarp : 1];  // this warp's group j's
    // warp: 0..2, the transposing warp's place among the three.
    __device__ __forceinline__ explicit TransposeLane(int warp) {
      if constexpr (kVtUnrolled) {
        constexpr int W = Traits::kQKPanelW;
        const int lane = threadIdx.x % 32, m = lane / 8, i = lane % 8;
        const uint32_t ld_xor = 16 * ((m / 2) ^ (kVtChunks == 8 ? i : (i >> 1) & 3));
#pragma unroll
        for (int x = 0; x < kVtChunkPairs; ++x) ld[x] = (8 * (m % 2) + i) * W + 16 * W * warp + ((32 * x) ^ ld_xor);
        const int dl = 16 * (m / 2) + 2 * i + ((i >= 4) ^ (m % 2));
#pragma unroll
        for (int j = 0; j < kVtGroupsPerWarp; ++j) {
          const int kg = warp + 3 * j;
          st[j] = dl * 128 + (kg / 8) * Traits::kVPanelBytes + ((16 * (kg % 8)) ^ (16 * (dl % 8)));
        }
      }
    }
  };

  // The byte permute's selector of this lane in the unrolled form (the g >= 4 swap).
  static __device__ __forceinline__ uint32_t transpose_selector() { return threadIdx.x % 32 / 4 < 4 ? 0x6420 : 0x7531; }

  // The unrolled form's units of one block for transposing warp `warp` (0..2):
  // V's rows at shared address `rows` (laid out as a K stage) -> V^T at `vt`
  // (laid out as a V^T stage). Also the V^T maker kernel's (fa3_fp8_vt_maker.cuh).
  static __device__ __forceinline__ void transpose_units(uint32_t rows, uint32_t vt, const TransposeLane& lane, int warp,
                                                         uint32_t sel_lo) {
    static_assert(kVtUnrolled, "the unrolled form only");
    constexpr int W = Traits::kQKPanelW;
    const uint32_t sel_hi = sel_lo ^ 0x1111;
#pragma unroll
    for (int j = 0; j < kVtGroupsPerWarp; ++j) {
      if (kVtGroups % 3 != 0 && j == kVtGroupsPerWarp - 1 && warp + 3 * j >= kVtGroups) break;
      const uint32_t st = vt + lane.st[j];
#pragma unroll
      for (int c0 = 0; c0 < HD / 16; c0 += 2) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, rows + lane.ld[(c0 % kVtChunks) / 2] + (c0 / kVtChunks) * Traits::kKPanelBytes +
                                 16 * W * 3 * j);
        sm90::stmatrix_x4(st + 16 * c0 * 128, __byte_perm(r[0], r[1], sel_lo), __byte_perm(r[0], r[1], sel_hi),
                          __byte_perm(r[2], r[3], sel_lo), __byte_perm(r[2], r[3], sel_hi));
      }
    }
  }

  static __device__ __forceinline__ void transpose_block(const Smem<Traits>& sm, const TransposeLane& lane, int s,
                                                         uint32_t parity) {
    constexpr int W = Traits::kQKPanelW;
    static_assert(Traits::kVPanelW == 128, "V^T in 128-byte panels");
    const int warp = threadIdx.x / 32 - 1, lane_id = threadIdx.x % 32;  // warp: 0..2
    if constexpr (kVtUnrolled) {
      const uint32_t sel_lo = transpose_selector();
      const uint32_t rows = smem_addr(v_rows(sm, s)), vt = smem_addr(sm.v(s));
      sm.empty_v(s).wait(parity ^ 1);
      transpose_units(rows, vt, lane, warp, sel_lo);
    } else {
      constexpr int kUnits = kVtGroups * (HD / 32);
      const int m = lane_id / 8, i = lane_id % 8;
      const uint32_t ld_base = smem_addr(v_rows(sm, s)) + (8 * (m % 2) + i) * W;
      const uint32_t ld_xor = 16 * ((m / 2) ^ (kVtChunks == 8 ? i : (i >> 1) & 3));
      const int dl = 16 * (m / 2) + 2 * i + ((i >= 4) ^ (m % 2));
      const uint32_t st_base = smem_addr(sm.v(s)) + dl * 128, st_xor = 16 * (dl % 8);
      const uint32_t sel_lo = lane_id / 4 < 4 ? 0x6420 : 0x7531;  // transpose_selector(), as first compiled
      sm.empty_v(s).wait(parity ^ 1);
#pragma unroll 1
      for (int u = warp; u < kUnits; u += 3) {
        const int kg = u % kVtGroups, c0 = 2 * (u / kVtGroups);  // c0: even, this unit's first chunk
        uint32_t r[4];
        ldmatrix_x4_trans(r, ld_base + (c0 / kVtChunks) * Traits::kKPanelBytes + 16 * kg * W +
                                 ((16 * (c0 % kVtChunks)) ^ ld_xor));
        sm90::stmatrix_x4(st_base + (kg / 8) * Traits::kVPanelBytes + 16 * c0 * 128 + ((16 * (kg % 8)) ^ st_xor),
                          __byte_perm(r[0], r[1], sel_lo), __byte_perm(r[0], r[1], sel_lo ^ 0x1111),
                          __byte_perm(r[2], r[3], sel_lo), __byte_perm(r[2], r[3], sel_lo ^ 0x1111));
      }
    }
    sm90::fence_proxy_async_smem();  // the stores, visible to wgmma's reads
    sm90::named_barrier_sync(kTransposeBar, kTransposeThreads);
    if (threadIdx.x == 32) {
      sm.full_v(s).arrive();
      empty_v_rows(sm, s).arrive();  // every thread's reads of the rows are done
    }
  }

  // Ping-pong turns, as in Fa3Fwd (named barriers 1, 2; 0 is __syncthreads).
  static constexpr int kTurnBar = 1;
  static __device__ __forceinline__ void wait_turn(int c) {
    if constexpr (Traits::kPingPong) sm90::named_barrier_sync(kTurnBar + c, 256);
  }
  static __device__ __forceinline__ void pass_turn(int c) {
    if constexpr (Traits::kPingPong) sm90::named_barrier_arrive(kTurnBar + (c + 1) % Traits::kConsumerWGs, 256);
  }

  // S = Q K^T for stage s: head_dim / 32 k32 steps, each 32 bytes along the
  // panel's rows. desc_q points at this warpgroup's 64 rows. Issued, not waited.
  static __device__ __forceinline__ void issue_qk(float (&sc)[BN / 2], uint64_t desc_q, const Smem<Traits>& sm,
                                                  int s) {
    const uint64_t desc_k = sm90::smem_desc_kmajor(sm.k(s), Traits::kQKPanelW);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < HD / 32; ++k) {
      const int panel = (32 * k) / Traits::kQKPanelW, col = (32 * k) % Traits::kQKPanelW;
      const uint64_t off_q = uint64_t(panel * Traits::kQPanelBytes + col) >> 4;
      const uint64_t off_k = uint64_t(panel * Traits::kKPanelBytes + col) >> 4;
      sm90::WgmmaE4m3<BN>::ss(sc, desc_q + off_q, desc_k + off_k, k > 0);
    }
    sm90::wgmma_commit();
  }

  // O += P V for stage s: block_n / 32 k32 steps, P from registers, V^T rows
  // (head_dim of them) hold the block's keys in e4m3_key_order. Issued, not waited.
  static __device__ __forceinline__ void issue_pv(float (&o)[HD / 2], uint32_t (&p)[BN / 32][4],
                                                  const Smem<Traits>& sm, int s) {
    const uint64_t desc_v = sm90::smem_desc_kmajor(sm.v(s), Traits::kVPanelW);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < BN / 32; ++k) {
      const int panel = (32 * k) / Traits::kVPanelW, col = (32 * k) % Traits::kVPanelW;
      sm90::WgmmaE4m3<HD>::rs(o, p[k], desc_v + (uint64_t(panel * Traits::kVPanelBytes + col) >> 4), 1);
    }
    sm90::wgmma_commit();
  }

  // P (f32, accumulator layout) -> e4m3 A fragments, no data between threads
  // (p_src_index).
  static __device__ __forceinline__ void p_to_e4m3(const float (&sc)[BN / 2], uint32_t (&p)[BN / 32][4]) {
#pragma unroll
    for (int k = 0; k < BN / 32; ++k)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        p[k][r] = sm90::pack_e4m3x4(sc[p_src_index(k, r, 0)], sc[p_src_index(k, r, 1)], sc[p_src_index(k, r, 2)],
                                    sc[p_src_index(k, r, 3)]);
  }

  // Blocks 1 .. n_blocks-1 of an item, K/V blocks top - 1 - i (block 0's P is in p): S_i = Q K_i^T and
  // O += P_{i-1} V_{i-1} issued in one turn (kSerialPvQk: P V first, waited
  // for), then the softmax of S_i.
  static __device__ __forceinline__ void run_blocks(const Fp8Args& a, const Smem<Traits>& sm, int c, int lane,
                                                    const TileCoord& tc, int n_blocks, int top, int qs, uint64_t desc_q,
                                                    int row0, float scale_log2, float (&o)[HD / 2],
                                                    float (&sc)[BN / 2], uint32_t (&p)[BN / 32][4],
                                                    float (&alpha)[2], RowState& st, RingPos<Traits::kStages>& ring,
                                                    int& s_prev, uint32_t& v_parity, float& vd_prev, int kv_head) {
    for (int i = 1; i < n_blocks; ++i, ++ring.count) {
      const int n = top - 1 - i;
      const int s = ring.stage();
      sm.full_k(s).wait(ring.parity());
      sm.full_v(s_prev).wait(v_parity);
      wait_turn(c);
      if constexpr (kSerialPvQk) {
        // P V first and waited for, so that P's registers are free before S's
        // are written: O, S and P do not fit the registers at once (Fa3Fp8Traits).
        rescale_o<HD>(o, alpha);
        sm90::fence_regs(o);
        issue_pv(o, p, sm, s_prev);
        sm90::wgmma_wait<0>();
        sm90::fence_regs(o);
        fence_words(p);
        issue_qk(sc, desc_q, sm, s);
        pass_turn(c);
        sm90::wgmma_wait<0>();
      } else {
        issue_qk(sc, desc_q, sm, s);  // S = Q K_i^T
        rescale_o<HD>(o, alpha);      // O *= exp(m_{i-2} - m_{i-1}), under the Q K^T GEMM
        sm90::fence_regs(o);
        issue_pv(o, p, sm, s_prev);   // O += P_{i-1} V_{i-1}
        pass_turn(c);
        sm90::wgmma_wait<1>();        // S landed; P V may still run
      }
      sm90::fence_regs(sc);
      if (lane == 0) {
        sm.empty_k(s).arrive();
        if (i == n_blocks - 1) sm.empty_q(qs).arrive();
      }
      if (fp8_kv_block_needs_mask<BM, BN>(n, tc.m_block, a))
        apply_mask<BN>(sc, n * BN, row0, a.seqlen_q, a.seqlen_k, a.causal);
      if constexpr (kBlocks) {  // scale_log2 holds Q's descale; this K block's joins it
        online_softmax_scaled<BN, Traits::kPolyEvery>(sc, st, scale_log2 * a.k_descale.at(tc.batch, kv_head, n * BN, a.k_block_rows), alpha);
        keep_v_units(alpha, vd_prev, a.v_descale.at(tc.batch, kv_head, n * BN, a.v_block_rows));
      } else {
        online_softmax<BN, Traits::kPolyEvery>(sc, st, scale_log2, alpha);
      }
      sm90::wgmma_wait<0>();        // P V landed: O and P_{i-1} free
      sm90::fence_regs(o);
      fence_words(p);
      if (lane == 0) sm.empty_v(s_prev).arrive();
      p_to_e4m3(sc, p);
      s_prev = s;
      v_parity = ring.parity();
    }
  }

  // O holds the blocks so far in units of the previous block's V descale; the
  // next P V adds this block's in units of its own: alpha (O's rescale, applied
  // before that product) takes the ratio.
  static __device__ __forceinline__ void keep_v_units(float (&alpha)[2], float& vd_prev, float vd) {
    const float ratio = vd_prev / vd;
    alpha[0] *= ratio;
    alpha[1] *= ratio;
    vd_prev = vd;
  }

  static __device__ __forceinline__ void fence_words(uint32_t (&p)[BN / 32][4]) {
#pragma unroll
    for (int i = 0; i < BN / 32; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(p[i][j])::"memory");
  }

  // Scores are in code units (S = Q_codes K_codes^T): the descales join the
  // softmax scale (kBlocks: Q's here, for warpgroup rows from wg_row0, each K
  // block's as the block comes).
  static __device__ __forceinline__ float item_scale(const Fp8Args& a, const TileCoord& tc, int kv_head,
                                                     int wg_row0) {
    return kBlocks ? a.softmax_scale * a.q_descale.at(tc.batch, tc.head, max(wg_row0, 0), a.q_block_rows)
                   : a.softmax_scale * a.q_descale.at(tc.batch, tc.head) * a.k_descale.at(tc.batch, kv_head);
  }

  // Block 0 of an item (its last K/V block: the masked one, if any), whose S
  // has landed in sc from K stage s: the K stage (and, for a one-block item,
  // Q slot qs) released, the softmax into a fresh st. kBlocks: vd_prev becomes
  // the block's V descale (alpha is applied to O = 0: no V ratio needed).
  static __device__ __forceinline__ void first_softmax(const Fp8Args& a, const Smem<Traits>& sm, int lane,
                                                       const Fp8Item& item, int s, int qs, int row0, int kv_head,
                                                       float scale_log2, float (&sc)[BN / 2], float (&alpha)[2],
                                                       RowState& st, float& vd_prev) {
    const int top = item.hi;
    if (lane == 0) {
      sm.empty_k(s).arrive();
      if (item.hi - item.lo == 1) sm.empty_q(qs).arrive();
    }
    if (fp8_kv_block_needs_mask<BM, BN>(top - 1, item.tc.m_block, a))
      apply_mask<BN>(sc, (top - 1) * BN, row0, a.seqlen_q, a.seqlen_k, a.causal);
    if constexpr (kBlocks) {
      const int key0 = (top - 1) * BN;
      online_softmax_scaled<BN, Traits::kPolyEvery>(sc, st, scale_log2 * a.k_descale.at(item.tc.batch, kv_head, key0, a.k_block_rows), alpha);
      vd_prev = a.v_descale.at(item.tc.batch, kv_head, key0, a.v_block_rows);
    } else {
      online_softmax<BN, Traits::kPolyEvery>(sc, st, scale_log2, alpha);  // alpha is applied to O = 0: harmless
    }
  }

  // An item's end, its O complete in o (not normalised): a piece of a split
  // tile hands its partial O, m and l over and the warp that ends its rows'
  // last piece adds up the others and stores them (combine_pieces); rows
  // before 0 (row_shift) store nothing; else O and LSE out (store_tile).
  // Everything but o, st and vd_prev is recomputed from the item, which keeps
  // the registers free in the cross-tile step, where two items are live; that
  // step takes whole tiles only (kPiece false), since merging pieces there spilled.
  template <bool kPiece = true>
  static __device__ __forceinline__ void finish_item(const Fp8Args& a, const Smem<Traits>& sm, int c,
                                                     const Fp8Item& item, float (&o)[HD / 2], RowState& st,
                                                     float vd_prev) {
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int wg_row0 = fp8_tile_row0<BM>(item.tc.m_block, a) + c * 64;
    const int row0 = wg_row0 + warp * 16 + lane / 4;
    const int kv_head = item.tc.head / (a.heads / a.heads_kv);
    const float scale = item_scale(a, item.tc, kv_head, wg_row0);
    if (kPiece && item.slot >= 0 && !combine_pieces(a, item, o, st, c * 128 + warp * 32 + lane, scale * 1.4426950408889634f))
      return;
    if (wg_row0 < 0) return;  // rows before 0: nothing to store
    // LSE = m * m_unit + ln l: m in code units, or (kBlocks) scaled in log2 units.
    store_tile(a, sm, c, item.tc, o, st, row0, lane % 4, kBlocks ? 0.6931471805599453f : scale,
               kBlocks ? vd_prev : a.v_descale.at(item.tc.batch, kv_head), !kPiece || item.slot < 0);
  }

  // An item's block 0 with nothing to overlap its Q K^T with: Q slot and K
  // stage waited for, S = Q K^T alone, its softmax; P in p. s: the K/V stage.
  static __device__ __forceinline__ void start_alone(const Fp8Args& a, const Smem<Traits>& sm, int c, int lane,
                                                     const Fp8Item& item, int s, int qs, uint32_t q_parity,
                                                     uint32_t kv_parity, uint64_t desc_q, int row0, int kv_head,
                                                     float scale_log2, float (&sc)[BN / 2], uint32_t (&p)[BN / 32][4],
                                                     float (&alpha)[2], RowState& st, float& vd_prev) {
    sm.full_q(qs).wait(q_parity);
    sm.full_k(s).wait(kv_parity);
    wait_turn(c);
    issue_qk(sc, desc_q, sm, s);
    pass_turn(c);
    sm90::wgmma_wait<0>();
    sm90::fence_regs(sc);
    first_softmax(a, sm, lane, item, s, qs, row0, kv_head, scale_log2, sc, alpha, st, vd_prev);
    p_to_e4m3(sc, p);
  }

  // O += P_last V_last (V^T stage s), alone, and the stage released.
  static __device__ __forceinline__ void last_pv_alone(const Smem<Traits>& sm, int c, int lane, float (&o)[HD / 2],
                                                       uint32_t (&p)[BN / 32][4], int s, uint32_t v_parity) {
    sm.full_v(s).wait(v_parity);
    wait_turn(c);
    sm90::fence_regs(o);
    issue_pv(o, p, sm, s);
    pass_turn(c);
    sm90::wgmma_wait<0>();
    sm90::fence_regs(o);
    if (lane == 0) sm.empty_v(s).arrive();
  }

  // Consumer warpgroup c: rows c*64 .. c*64+63 of each item.
  static __device__ __forceinline__ void consumer(const Fp8Args& a, const Smem<Traits>& sm, int c) {
    // The last warpgroup hands the first turn to warpgroup 0.
    if (Traits::kPingPong && c == Traits::kConsumerWGs - 1) pass_turn(c);
    if constexpr (Traits::kCrossTile)
      consumer_chained(a, sm, c);
    else
      consumer_per_tile(a, sm, c);
  }

  // Each item's first Q K^T and last P V alone (the bf16 kernel's per-tile
  // consumer). Its block 0 and its store are written out here rather than
  // taken from start_alone and finish_item: with those, ptxas allocated the
  // registers of every instance differently (cuobjdump), and as written the
  // instances keep the SASS that their measurements were taken on.
  static __device__ __forceinline__ void consumer_per_tile(const Fp8Args& a, const Smem<Traits>& sm, int c) {
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int group = a.heads / a.heads_kv;
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    for (int round = 0;; ++round) {
      const int idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
      if (idx >= a.num_items) break;
      const Fp8Item item = fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(idx, a);
      const TileCoord& tc = item.tc;
      const int n_blocks = item.hi - item.lo, top = item.hi;
      const int wg_row0 = fp8_tile_row0<BM>(tc.m_block, a) + c * 64;  // < 0: no rows (row_shift)
      const int row0 = wg_row0 + warp * 16 + g;  // this thread's rows: row0, row0 + 8
      const int kv_head = tc.head / group;
      const float scale = item_scale(a, tc, kv_head, wg_row0);
      const float scale_log2 = scale * 1.4426950408889634f;
      float vd_prev = 1.f;  // kBlocks: V descale of the last block added to O
      float o[HD / 2];
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
      RowState st;
      if (n_blocks > 0) {
        const int qs = qring.stage();
        sm.full_q(qs).wait(qring.parity());
        const uint64_t desc_q = sm90::smem_desc_kmajor(sm.q(qs) + c * 64 * Traits::kQKPanelW, Traits::kQKPanelW);
        float sc[BN / 2];
        uint32_t p[BN / 32][4];
        float alpha[2];

        // Block 0 (the last K/V block: the masked one, if any).
        int s_prev = ring.stage();
        sm.full_k(s_prev).wait(ring.parity());
        wait_turn(c);
        issue_qk(sc, desc_q, sm, s_prev);
        pass_turn(c);
        sm90::wgmma_wait<0>();
        sm90::fence_regs(sc);
        first_softmax(a, sm, lane, item, s_prev, qs, row0, kv_head, scale_log2, sc, alpha, st, vd_prev);
        p_to_e4m3(sc, p);
        uint32_t v_parity = ring.parity();
        ++ring.count;

        run_blocks(a, sm, c, lane, tc, n_blocks, top, qs, desc_q, row0, scale_log2, o, sc, p, alpha, st, ring, s_prev,
                   v_parity, vd_prev, kv_head);

        rescale_o<HD>(o, alpha);  // O += P_last V_last, alone
        last_pv_alone(sm, c, lane, o, p, s_prev, v_parity);
        ++qring.count;
      }
      // A piece of a split tile: its partial O, m and l go out, and the warp that
      // ends its rows' last piece adds up the others and stores the tile's rows.
      if (item.slot >= 0 && !combine_pieces(a, item, o, st, c * 128 + warp * 32 + lane, scale_log2)) continue;
      if (wg_row0 < 0) continue;  // rows before 0: nothing to store
      // LSE = m * m_unit + ln l: m in code units, or (kBlocks) scaled in log2 units.
      store_tile(a, sm, c, tc, o, st, row0, t, kBlocks ? 0.6931471805599453f : scale,
                 kBlocks ? vd_prev : a.v_descale.at(tc.batch, kv_head), item.slot < 0);
    }
  }

  // Items as one pipeline (Traits::kCrossTile): an item's last P V, waited
  // for, then the next item's first Q K^T in the same turn, and the finished
  // item stored while that Q K^T runs, so a tile's end and the next one's start
  // take one turn instead of two. Kept where it measured faster (Fa3Fp8Traits::
  // kCrossTile: head_dim 64). (The
  // bf16 kernel's order, the next softmax under this P V, spilled here: O, S
  // and P live beside two items' state.) Where the next item has no K/V block,
  // or this one is a piece of a split tile (its merge spilled in the step),
  // its last P V runs alone and the next item starts alone.
  static __device__ __forceinline__ void consumer_chained(const Fp8Args& a, const Smem<Traits>& sm, int c) {
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int group = a.heads / a.heads_kv;
    RingPos<Traits::kStages> ring;
    RingPos<Traits::kQStages> qring;
    auto q_desc = [&](int qs) {
      return sm90::smem_desc_kmajor(sm.q(qs) + c * 64 * Traits::kQKPanelW, Traits::kQKPanelW);
    };
    int round = 0;
    for (;;) {
      int idx = Sched::tile_index(round++, gridDim.x, blockIdx.x);
      if (idx >= a.num_items) break;
      Fp8Item item = fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(idx, a);
      float o[HD / 2];
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
      RowState st;
      float vd_prev = 1.f;  // kBlocks: V descale of the last block added to O
      if (item.hi == item.lo) {  // no K/V block: O = 0, LSE = -inf
        finish_item(a, sm, c, item, o, st, vd_prev);
        continue;
      }
      float sc[BN / 2];
      uint32_t p[BN / 32][4];
      float alpha[2];
      int s_prev = ring.stage();
      float scale_log2;  // the item's (item_scale), in log2 units
      {
        const int qs = qring.stage();
        const int wg_row0 = fp8_tile_row0<BM>(item.tc.m_block, a) + c * 64;
        const int kv_head = item.tc.head / group;
        scale_log2 = item_scale(a, item.tc, kv_head, wg_row0) * 1.4426950408889634f;
        start_alone(a, sm, c, lane, item, s_prev, qs, qring.parity(), ring.parity(), q_desc(qs),
                    wg_row0 + warp * 16 + g, kv_head, scale_log2, sc, p, alpha, st, vd_prev);
      }
      uint32_t v_parity = ring.parity();
      ++ring.count;

      for (;;) {
        // Item `item`: block 0's P is in p; blocks 1 .. n-1 here. Its constants
        // are recomputed from the item, not carried from the step that started it.
        const int qs = qring.stage();
        const int wg_row0 = fp8_tile_row0<BM>(item.tc.m_block, a) + c * 64;  // < 0: no rows (row_shift)
        run_blocks(a, sm, c, lane, item.tc, item.hi - item.lo, item.hi, qs, q_desc(qs), wg_row0 + warp * 16 + g,
                   scale_log2, o, sc, p, alpha, st, ring, s_prev, v_parity, vd_prev, item.tc.head / group);
        rescale_o<HD>(o, alpha);
        ++qring.count;
        const int done = idx;  // the finished item and the next, kept as indices (registers)
        bool chain = false;
        idx = Sched::tile_index(round, gridDim.x, blockIdx.x);
        if (idx < a.num_items) {
          const Fp8Item next = fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(idx, a);
          chain = next.hi > next.lo && item.slot < 0;
        }
        if (!chain) {  // the outer loop takes the next item
          last_pv_alone(sm, c, lane, o, p, s_prev, v_parity);
          finish_item(a, sm, c, fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(done, a), o, st, vd_prev);
          break;
        }
        ++round;
        const int next_qs = qring.stage();
        sm.full_q(next_qs).wait(qring.parity());
        const int s = ring.stage();
        sm.full_k(s).wait(ring.parity());
        sm.full_v(s_prev).wait(v_parity);
        wait_turn(c);
        sm90::fence_regs(o);
        issue_pv(o, p, sm, s_prev);
        sm90::wgmma_wait<0>();
        sm90::fence_regs(o);
        fence_words(p);
        issue_qk(sc, q_desc(next_qs), sm, s);
        pass_turn(c);
        if (lane == 0) sm.empty_v(s_prev).arrive();
        finish_item<false>(a, sm, c, fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(done, a), o, st, vd_prev);
        item = fp8_item_at<BM, BN, Sched, Traits::kFastDivWalk>(idx, a);
        {
          const int next_row0 = fp8_tile_row0<BM>(item.tc.m_block, a) + c * 64;
          const int kv_head = item.tc.head / group;
          scale_log2 = item_scale(a, item.tc, kv_head, next_row0) * 1.4426950408889634f;
          sm90::wgmma_wait<0>();
          sm90::fence_regs(sc);
          st = RowState{};
          first_softmax(a, sm, lane, item, s, next_qs, next_row0 + warp * 16 + g, kv_head, scale_log2, sc, alpha, st,
                        vd_prev);
        }
        p_to_e4m3(sc, p);
#pragma unroll
        for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
        s_prev = s;
        v_parity = ring.parity();
        ++ring.count;
      }
    }
  }

  // Split tail: this piece's O (not normalised), row max m (score units) and l
  // (this thread's partial sum) into its slot of split_partials, then the warp's
  // count of pieces done for its 16 rows. The warp that brings the count to
  // split_k reads the other pieces' partials (from L2: written by other blocks
  // of this launch), merges them into o and st as the online softmax merges
  // blocks, sets the count back to 0 for the next launch, and returns true: it
  // stores the rows. The others return false. Each thread reads back exactly the
  // words that its own lane wrote in each other piece (same rows, same columns).
  // Not with descales per block (O in per-block V units): the host does not split those.
  static __device__ __forceinline__ bool combine_pieces(const Fp8Args& a, const Fp8Item& item, float (&o)[HD / 2],
                                                        RowState& st, int tid, float scale_log2) {
    constexpr int kT = Traits::kConsumerWGs * 128, kWords = HD / 2 + 4;
    const int lane = tid % 32;
    float* mine = a.split_partials + size_t(item.slot * a.split_k + item.piece) * kWords * kT + tid;
#pragma unroll
    for (int i = 0; i < HD / 2; ++i) __stcg(mine + i * kT, o[i]);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      __stcg(mine + (HD / 2 + r) * kT, st.m[r]);
      __stcg(mine + (HD / 2 + 2 + r) * kT, st.l[r]);
    }
    __threadfence();  // the partial, visible to whichever block counts last
    sm90::griddep_wait();  // the counts: zeroed by the pre-pass, when it launched this kernel early
    __syncwarp();
    unsigned* count = a.split_counts + item.slot * Traits::kConsumerWarps + tid / 32;
    unsigned done = 0;
    if (lane == 0) done = atomicAdd(count, 1u);
    done = __shfl_sync(0xffffffffu, done, 0);
    if (done != unsigned(a.split_k - 1)) return false;
    __threadfence();
    if (lane == 0) *count = 0;
    for (int j = 0; j < a.split_k; ++j) {
      if (j == item.piece) continue;
      const float* other = a.split_partials + size_t(item.slot * a.split_k + j) * kWords * kT + tid;
      float f_mine[2], f_other[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float m_o = __ldcg(other + (HD / 2 + r) * kT), l_o = __ldcg(other + (HD / 2 + 2 + r) * kT);
        const float m = fmaxf(st.m[r], m_o);
        f_mine[r] = st.m[r] == -INFINITY ? 0.f : fast_exp2((st.m[r] - m) * scale_log2);
        f_other[r] = m_o == -INFINITY ? 0.f : fast_exp2((m_o - m) * scale_log2);
        st.m[r] = m;
        st.l[r] = st.l[r] * f_mine[r] + l_o * f_other[r];
      }
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) {
        const int r = (i / 2) % 2;  // accumulator element 4j + 2r + e is row g + 8r
        o[i] = o[i] * f_mine[r] + __ldcg(other + i * kT) * f_other[r];
      }
    }
    return true;
  }

  // O = O * v_descale / l in bf16 (kBlocks: the last block's V descale, O's
  // units), LSE = m * m_unit + ln(l); a row that saw no key gets O = 0 and LSE =
  // -inf. Rows past seqlen_q are not written. O leaves through the staging tile
  // and TMA stores (Traits::kTmaStoreO: store_o_tma) where the whole warpgroup
  // stores (`whole`), or in 16-byte stores (fa3_o_store.cuh), as the bf16
  // kernel's: a split tile's rows are stored by whichever warp ends them
  // (combine_pieces), and store_o_tma's barriers need all four.
  static __device__ __forceinline__ void store_tile(const Fp8Args& a, const Smem<Traits>& sm, int c,
                                                    const TileCoord& tc, const float (&o)[HD / 2],
                                                    const RowState& st, int row0, int t, float m_unit,
                                                    float v_descale, bool whole) {
    const bool tma = Traits::kTmaStoreO && whole;
    __nv_bfloat16* const out0 = static_cast<__nv_bfloat16*>(a.o) + tc.batch * a.o_batch_stride +
                                row0 * a.o_row_stride + tc.head * a.o_head_stride;
    if constexpr (Traits::kCrossTile) {
      // O packed into bf16 pairs before anything else, so that its floats are
      // dead early: the cross-tile step stores while the next item's S lands
      // in other registers (consumer_chained).
      float f[2], l[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        l[r] = quad_sum(st.l[r]);  // every lane: the shuffles need the whole warp
        f[r] = l[r] > 0.f ? v_descale / l[r] : 0.f;
      }
      auto store_lse = [&]() {
#pragma unroll
        for (int r = 0; r < 2; ++r) store_lse_row(a, tc, row0 + 8 * r, t, st.m[r], l[r], m_unit);
      };
      if (tma) {
        uint32_t w[HD / 4];
        pack_o(o, f, w);
        store_lse();
        store_o_tma(a, sm, c, tc, [&](int i) { return w[i]; });
      } else {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          store_o_row<__nv_bfloat16, HD>(out0 + 8 * r * a.o_row_stride, o, r, f[r], t, row0 + 8 * r < a.seqlen_q);
        store_lse();
      }
    } else {
      float f[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = row0 + 8 * r;
        const float l = quad_sum(st.l[r]);  // every lane: the shuffles need the whole warp
        f[r] = l > 0.f ? v_descale / l : 0.f;
        if (!tma) store_o_row<__nv_bfloat16, HD>(out0 + 8 * r * a.o_row_stride, o, r, f[r], t, row < a.seqlen_q);
        store_lse_row(a, tc, row, t, st.m[r], l, m_unit);
      }
      if (tma) store_o_tma(a, sm, c, tc, [&](int i) { return pack_o_word(o, f, i); });
    }
  }

  // Row `row`'s LSE, m * m_unit + ln l (-inf where the row saw no key), by the
  // first lane of its quad. Division (O's factor, in store_tile) and logf kept:
  // __frcp_rn and __logf, which the bf16 kernel's store_tile takes, measured
  // 0.98-1.00 in this kernel (PERF_NOTES fa3-short-epilogue-math).
  static __device__ __forceinline__ void store_lse_row(const Fp8Args& a, const TileCoord& tc, int row, int t, float m,
                                                       float l, float m_unit) {
    if (t == 0 && row < a.seqlen_q)
      a.lse[(int64_t(tc.batch) * a.heads + tc.head) * a.seqlen_q + row] = l > 0.f ? m * m_unit + logf(l) : -INFINITY;
  }

  // Word i of O * f in bf16 pairs, in the order store_o_tma's stmatrix.x4
  // takes them: for each pair of 8-column groups j, j + 1 (i / 4 = j / 2),
  // rows g (even i % 4) and g + 8 (odd), columns of group j + (i % 4) / 2.
  static __device__ __forceinline__ uint32_t pack_o_word(const float (&o)[HD / 2], const float (&f)[2], int i) {
    const int e = 8 * (i / 4) + 2 * (i % 4);  // 4 j + 2 (i % 4), j = 2 (i / 4)
    return pack2<__nv_bfloat16>(o[e] * f[i % 2], o[e + 1] * f[i % 2]);
  }
  static __device__ __forceinline__ void pack_o(const float (&o)[HD / 2], const float (&f)[2],
                                                uint32_t (&w)[HD / 4]) {
#pragma unroll
    for (int i = 0; i < HD / 4; ++i) w[i] = pack_o_word(o, f, i);
  }

  // Named barrier of consumer warpgroup c's rows of the O tile: ids after the
  // turns' (1..3) and the transposing warps'.
  static constexpr int kOTileBar = kTransposeBar + 1;

  // Traits::kTmaStoreO: warpgroup c writes its 64 rows of O (times f, in bf16)
  // into its rows of the staging tile with stmatrix, and one thread stores each
  // 64-column panel with a TMA store that runs on while the warpgroup starts its
  // next tile. With every SM ending its tiles at about the same time, 16-byte
  // stores from registers held each warpgroup 2400-3100 cycles per tile (a clock
  // probe on the H100, PERF_NOTES fa3-fp8-o-tma-store). Rows past seqlen_q fall
  // outside the tensor map and are not written. The thread that issued the
  // previous tile's stores waits until they have read the tile before anyone
  // writes it again.
  template <typename Words>  // word(i): pack_o_word's i-th word
  static __device__ __forceinline__ void store_o_tma(const Fp8Args& a, const Smem<Traits>& sm, int c,
                                                     const TileCoord& tc, Words word) {
    const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
    const bool leader = threadIdx.x % 128 == 0;
    uint8_t* const tile = sm.base + Traits::kOffO;
    if (leader) sm90::bulk_wait_read<0>();
    sm90::named_barrier_sync(kOTileBar + c, 128);
    // stmatrix.x4 takes two 8-column groups j, j + 1 of the warp's 16 rows:
    // matrix m is rows 8 (m % 2) .. +7 of group j + m / 2, and lane i gives row
    // i % 8 of matrix i / 8. Under the 128B swizzle a row's 16-byte chunk k sits
    // at chunk k ^ (row % 8), and row % 8 is i % 8 here (the panels are
    // 1024-byte aligned).
    const int m = lane / 8, ri = lane % 8;
    const uint32_t rows = smem_addr(tile) + (c * 64 + warp * 16 + 8 * (m % 2) + ri) * 128;
#pragma unroll
    for (int j = 0; j < HD / 8; j += 2) {
      const int chunk = j % 8 + m / 2;
      sm90::stmatrix_x4(rows + (j / 8) * Traits::kOPanelBytes + ((chunk ^ ri) << 4), word(2 * j), word(2 * j + 1),
                        word(2 * j + 2), word(2 * j + 3));
    }
    sm90::fence_proxy_async_smem();  // the generic-proxy writes, before the TMA (async proxy) reads them
    sm90::named_barrier_sync(kOTileBar + c, 128);
    if (leader) {
#pragma unroll
      for (int p = 0; p < HD / 64; ++p)
        sm90::tma_store_4d(&a.tma_o, tile + p * Traits::kOPanelBytes + c * 64 * 128, p * 64,
                           fp8_tile_row0<BM>(tc.m_block, a) + c * 64, tc.head, tc.batch);
      sm90::bulk_commit();
    }
  }

  // Before the block exits: its last O stores have completed.
  static __device__ __forceinline__ void finish_stores() {
    if constexpr (Traits::kTmaStoreO)
      if (threadIdx.x % 128 == 0) sm90::bulk_wait<0>();
  }
};

template <typename Traits, bool kBlocks>
__global__ void __launch_bounds__(Traits::kThreads, 1) fa3_fp8_fwd_kernel(const __grid_constant__ Fp8Args args) {
#if FA_SM90A_ENABLED
  extern __shared__ uint8_t smem_raw[];
  const Smem<Traits> sm = setup_smem<Traits>(smem_raw);
  const int wg = Traits::kUniformWarpgroupIndex ? sm90::warpgroup_index() : int(threadIdx.x / 128);

  using Fwd = Fa3Fp8Fwd<Traits, kBlocks>;
  if constexpr (Traits::kTransposeV) {  // the V rows' barriers, after setup_smem's
    if (threadIdx.x == 0) {
      for (int s = 0; s < Traits::kVRowStages; ++s) {
        Fwd::full_v_rows(sm, s).init(1);
        Fwd::empty_v_rows(sm, s).init(1);
      }
      *Fwd::v_rows_end(sm) = ~0u;
      sm90::fence_barrier_init();
    }
    __syncthreads();
  }
  if constexpr (Traits::kVtWarps) {  // the V^T team's barrier and end word
    if (threadIdx.x == 0) {
      Fwd::vt_rows_full(sm).init(1);
      *Fwd::vt_team_end(sm) = 0;
      sm90::fence_barrier_init();
    }
    __syncthreads();
  }

  if (wg == 0) {  // producer warpgroup
    sm90::regs_release<Traits::kProducerRegs>();
    if (threadIdx.x == 0) {
      sm90::tma_prefetch_map(&args.tma_q);
      sm90::tma_prefetch_map(&args.tma_k);
      sm90::tma_prefetch_map(Traits::kTransposeV ? &args.tma_v : &args.tma_vt);
      if constexpr (Traits::kTmaStoreO) sm90::tma_prefetch_map(&args.tma_o);
      Fwd::producer(args, sm);
    } else if constexpr (Traits::kTransposeV) {
      if (threadIdx.x >= 32) Fwd::transposer(sm);
    } else if constexpr (Traits::kVtWarps) {
      if (threadIdx.x >= 32 && args.vt_sync) Fwd::vt_team(args, sm);
    }
  } else {  // consumer warpgroups
    sm90::regs_acquire<Traits::kConsumerRegs>();
    Fwd::consumer(args, sm, wg - 1);
    Fwd::finish_stores();
  }
#endif
}

}  // namespace fa::fa3
