// Compile-time shape of one FP8 (e4m3) fa3 forward instantiation: roles,
// shared-memory layout, register split. The member names the bf16 kernel's
// Smem view reads (kOffQ, kQBytes, kOffK, kKVBytes, kOffV, kOffBar, kQStages)
// mean the same here, so that view serves both kernels.
#pragma once
#include <cstdint>

#include "common/register_split.h"
#include "common/smem_limit.h"
#include "fa3/fa3_fp8_vt_tasks.h"
#include "fa3/fa3_scheduler.cuh"

namespace fa {

template <int HeadDim, int BlockM, int BlockN, int Stages, int PolyEvery = 0, bool TransposeV = false,
          bool ShareVt = false, bool VtWarps = true>
struct Fa3Fp8Traits {
  static constexpr int kHeadDim = HeadDim, kBlockM = BlockM, kBlockN = BlockN, kStages = Stages;
  // Where V becomes V^T (P V's k, the key, must run along V^T's rows): false,
  // in the pre-pass (transpose_v_kernel) before the kernel, whose TMA then reads
  // V^T; true, in the kernel: TMA brings each block's V rows into a staging
  // ring and producer warps 1..3 transpose them into the V^T ring
  // (fa3_fp8_kernel.cuh, transpose_block).
  static constexpr bool kTransposeV = TransposeV;
  static constexpr int kVRowStages = TransposeV ? Stages : 0;
  // The softmax's exponentials: every kPolyEvery-th 8-column group on the FMA
  // pipe (exp2_poly), the rest on MUFU; 0: all on MUFU (fa3_softmax.cuh, exp2_row).
  static constexpr int kPolyEvery = PolyEvery;

  // One producer warpgroup, one consumer warpgroup per 64 query rows.
  static constexpr int kConsumerWGs = BlockM / 64;
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  static constexpr int kConsumerWarps = 4 * kConsumerWGs;
  static_assert(BlockM == 128 || BlockM == 192, "block_m: 128 or 192 (two or three consumer warpgroups)");
  static_assert(BlockN % 64 == 0 && BlockN <= 256, "block_n: a multiple of 64 (V^T rows are block_n bytes)");
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 256, "head_dim: 64, 128 or 256");
  static_assert(Stages >= 1 && Stages <= 4, "stages: 1..4");

  // Every operand is K-major, one byte per element: Q and K rows are head_dim
  // bytes, V^T rows (one per head_dim index) are block_n bytes of keys. A row
  // of a multiple of 128 bytes is cut into 128-byte panels (128B swizzle); any
  // other multiple of 64 (head_dim 64; block_n 64 or 192) into 64-byte panels
  // with the 64B swizzle (wgmma_fp8.cuh).
  static constexpr int kQKPanelW = HeadDim < 128 ? HeadDim : 128;  // bytes: also the swizzle width
  static constexpr int kQKPanels = HeadDim / kQKPanelW;
  static constexpr int kVPanelW = BlockN % 128 == 0 ? 128 : 64;
  static constexpr int kVPanels = BlockN / kVPanelW;
  static_assert(BlockN == 64 || BlockN == 128 || BlockN == 192 || BlockN == 256,
                "block_n: 64, 128, 192 or 256 (the wgmma widths of wgmma_fp8_ops.inc)");
  static constexpr int kQPanelBytes = BlockM * kQKPanelW;
  static constexpr int kKPanelBytes = BlockN * kQKPanelW;
  static constexpr int kVPanelBytes = HeadDim * kVPanelW;
  static constexpr int kQBytes = BlockM * HeadDim;
  static constexpr int kKVBytes = BlockN * HeadDim;  // one K stage, and one V^T stage
  static_assert(kQPanelBytes % 1024 == 0 && kKPanelBytes % 1024 == 0 && kVPanelBytes % 1024 == 0,
                "panels must keep the swizzle atoms aligned");

  // Shared memory: Q slots | K ring | V^T ring | [V rows ring | O tile | V^T task stages] | mbarriers, as
  // in Fa3Traits; the V rows' full and empty barriers follow the ring's, then
  // one 8-byte slot for the count of V row blocks (fa3_fp8_kernel.cuh, transposer).
  static constexpr int kVRowSlots = TransposeV ? 2 * Stages + 1 : 0;
  static constexpr int kBarBytes(int q_stages) { return (2 * q_stages + 4 * Stages + kVRowSlots) * 8; }
  // ShareVt: producer warps 1..3 may make V^T for the whole launch instead of
  // the pre-pass (Fp8Args::vt_sync; fa3_fp8_kernel.cuh vt_team): the registry's
  // hd128 tile past the in-kernel lengths (fa3_fp8_entry.cuh) and fp8_check's
  // `vs`. Which tiles may: fp8_tile_can_share_vt. The warps stage one block of
  // V rows and one of V^T; one more word notes, for the TMA thread, that every
  // V^T block is written (in a register of its loop it spilled).
  static constexpr bool kShareVt = ShareVt;
  // Who makes that V^T: producer warps 1..3 (true), or a kernel of its own on
  // a few SMs launched just before this one (false: fa3_fp8_vt_maker.cuh,
  // Fp8FwdParams::vt_maker_blocks), so that no consumer shares its SM with it;
  // the warps' stages below then go unused (a measurement variant: fp8_check's vm*).
  static constexpr bool kVtWarps = ShareVt && VtWarps;
  static_assert(!ShareVt || fp8_tile_can_share_vt(BlockM, TransposeV),
                "V^T shared by the producer warps: three consumer warpgroups, no in-kernel transpose");
  // Where the producer warps make V^T: a stage of V rows and one of V^T (one K/V
  // stage each), then the TMA thread's note, the team's end word and the rows'
  // barrier (fa3_fp8_kernel.cuh, vt_team).
  static constexpr int kVtStageBytes = kShareVt ? 2 * kKVBytes + 32 : 0;
  static constexpr int kVtReadyOffset = 2 * kKVBytes;  // inside the stages' region
  static constexpr int kVtEndOffset = kVtReadyOffset + 4, kVtBarOffset = kVtReadyOffset + 8;
  // Shared memory with two Q slots and no O tile (+ 1024: slack to align the base).
  static constexpr int kBytesTwoQ =
      2 * kQBytes + (2 * Stages + kVRowStages) * kKVBytes + kVtStageBytes + kBarBytes(2) + 1024;
  static constexpr int kQStages = kBytesTwoQ <= kSmemPerBlockMax ? 2 : 1;
  // O leaves through shared memory and TMA stores (fa3_fp8_kernel.cuh, store_tile)
  // where its bf16 tile fits beside two Q slots and the rings: the warpgroups
  // then go on to their next tile while the copy engine writes O. Elsewhere
  // (hd256) 16-byte stores from registers (fa3_o_store.cuh). Both are timed in
  // PERF_NOTES fa3-fp8-o-tma-store.
  static constexpr int kOBytes = BlockM * HeadDim * 2;
  static constexpr bool kTmaStoreO = kBytesTwoQ + kOBytes <= kSmemPerBlockMax;
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQStages * kQBytes;
  static constexpr int kOffV = kOffK + Stages * kKVBytes;
  static constexpr int kOffVRows = kOffV + Stages * kKVBytes;  // V's rows as K's: kQKPanelW-byte panels
  // O's staging tile (kTmaStoreO): 64-column panels of block_m rows, 128B swizzle.
  static constexpr int kOffO = kOffVRows + kVRowStages * kKVBytes;
  static constexpr int kOPanelBytes = BlockM * 128;
  static constexpr int kOffVtStage = kOffO + (kTmaStoreO ? kOBytes : 0);
  static constexpr int kOffBar = kOffVtStage + kVtStageBytes;
  static constexpr int kNumBars = 2 * kQStages + 4 * Stages + kVRowSlots;
  static_assert(!TransposeV || kVPanelW == 128, "in-kernel V transpose: V^T in 128-byte panels (block_n 128 or 256)");
  static constexpr int kSmemBytes = kOffBar + kNumBars * 8 + 1024;  // + slack to align the base to 1024
  static_assert(kSmemBytes <= kSmemPerBlockMax, "tile does not fit the 227 KiB of shared memory per block");

  // Ping-pong GEMM turns between the consumer warpgroups, as in the bf16 kernel.
  static constexpr bool kPingPong = true;

  // Register split after setmaxnreg: consumers hold O (head_dim / 2 floats), S
  // (block_n / 2 floats) and P (block_n / 8 words).
  // Three consumer warpgroups (block_m 192) leave each 160 (the bf16 kernel's split).
  static constexpr int kProducerRegs = kConsumerWGs == 3 ? 32 : 24;
  static constexpr int kConsumerRegs = kConsumerWGs == 3 ? 160 : 240;
  static_assert(register_split_fits(kConsumerWGs, kProducerRegs, kConsumerRegs),
                "register split over the block's launch allocation (common/register_split.h)");
  // Each block issues P V and waits for it before Q K^T where O (head_dim / 2
  // words), S (block_n / 2) and P (block_n / 8) with 32 more do not fit the
  // consumer's registers: ptxas spilled 144 bytes on hd128 x 256 keys (224
  // words) at 240, and could not fit hd128 x 128 keys (144) at 160; hd256 x 128
  // keys (208) at 240 compiles without spills. Otherwise P V runs on while S's
  // softmax starts (fa3_fp8_kernel.cuh, run_blocks).
  static constexpr bool kSerialPvQk = HeadDim / 2 + BlockN / 2 + BlockN / 8 + 32 > kConsumerRegs;

  // An item's last P V issued in the same turn as the next item's first Q K^T,
  // the finished item stored under it (fa3_fp8_kernel.cuh, consumer_chained).
  // Same-run A/B on the H200 (PERF_NOTES fa3-fp8-cross-tile): hd64's 128x256
  // tile +1.3-4.7 % from 2048 tokens; hd128 -0.2-2.7 % and hd256 -2.4-3.0 %,
  // so head_dim 64 only. Not with the in-kernel transpose, where the step
  // spilled (24-28 bytes at hd128 and hd256) and which hd64 runs for short queries.
  static constexpr bool kCrossTile = HeadDim == 64 && !TransposeV;

  using Scheduler = fa3::StaticPersistentScheduler;
  // The tile walk's divisions (fa3_scheduler.cuh, tile_at), as Fa3Traits::kFastDivWalk:
  // FastDiv with two consumer warpgroups. Same-run A/B on the H200 (PERF_NOTES
  // fa3-short-fast-div): hd64 +2.5-2.9 % at 512, 0.996-0.998 from 4096; hd256
  // 1.00-1.03; hd128's three warpgroups 0.98-0.99 non-causal from 2048, so '/'.
  static constexpr bool kFastDivWalk = kConsumerWGs == 2;
  // The warpgroup index read from lane 0, as Fa3Traits::kUniformWarpgroupIndex:
  // same-run A/B on the H200 (PERF_NOTES fa3-uniform-warpgroup-index), hd128's three
  // warpgroups +1.4-3.0 % at every length, hd256 +1-1.5 % from 1024, hd64 level.
  static constexpr bool kUniformWarpgroupIndex = true;
};

}  // namespace fa
