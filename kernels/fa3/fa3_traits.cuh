// Compile-time shape of one fa3 instantiation: warpgroup roles, shared-memory
// layout, register split, tile scheduler. Everything the kernel derives from the
// template arguments lives here, checked by static_asserts.
#pragma once
#include <cstdint>

#include "common/register_split.h"
#include "common/sm90/tma.cuh"
#include "common/smem_limit.h"
#include "fa3/fa3_scheduler.cuh"

// Ping-pong GEMM turns between consumer warpgroups can be built out
// (-DFA3_PINGPONG=0) for the ablation: every tile then runs without them.
#ifndef FA3_PINGPONG
#define FA3_PINGPONG 1
#endif

namespace fa {

// Turns: whether this instantiation's consumer warpgroups take ping-pong turns
// (kPingPong); a tile may be compiled both ways, Fa3Kernel::launch picking by the
// problem's length (kTurnsAbove).
template <int HeadDim, int BlockM, int BlockN, int Warps, int Stages, bool Turns>
struct Fa3Traits {
  static constexpr int kHeadDim = HeadDim, kBlockM = BlockM, kBlockN = BlockN, kStages = Stages;

  // One producer warpgroup, then one consumer warpgroup per 64 query rows
  // (a wgmma is m64: each consumer owns 64 rows of the Q tile).
  static constexpr int kConsumerWGs = BlockM / 64;
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  static constexpr int kConsumerWarps = 4 * kConsumerWGs;
  static_assert(BlockM % 64 == 0 && kConsumerWGs >= 1 && kConsumerWGs <= 3, "block_m: 64, 128 or 192");
  static_assert(Warps * 32 == kThreads, "warps must be 4 * (block_m / 64 + 1): a producer warpgroup + consumers");
  static_assert(BlockN % 16 == 0 && BlockN >= 16 && BlockN <= 256, "block_n: multiple of 16 up to 256 (wgmma n)");
  static_assert(HeadDim % 64 == 0 && HeadDim <= 256, "head_dim: 64, 128 or 256");
  static_assert(Stages >= 1 && Stages <= 4, "stages: 1..4");

  // Tiles are stored as head_dim / 64 panels of [rows][64] elements (128 B
  // rows, 128B swizzle); a panel is what one TMA box and one wgmma descriptor
  // cover along head_dim.
  static constexpr int kPanels = HeadDim / sm90::kPanelElems;
  static constexpr int kQPanelBytes = BlockM * sm90::kPanelBytes;
  static constexpr int kKVPanelBytes = BlockN * sm90::kPanelBytes;
  static constexpr int kQBytes = kPanels * kQPanelBytes;
  static constexpr int kKVBytes = kPanels * kKVPanelBytes;  // one K or one V stage
  static_assert(kKVPanelBytes % 1024 == 0 && kQPanelBytes % 1024 == 0, "panels must keep 1024-B swizzle atoms aligned");

  // Shared memory: Q slots | K ring | V ring | mbarriers. Two Q slots where
  // they fit: the next tile's Q then loads while this tile's last blocks run,
  // instead of after its last Q K^T (one TMA latency per tile, which short
  // sequences feel most).
  static constexpr int kBarBytes(int q_stages) { return (2 * q_stages + 4 * Stages) * 8; }
  static constexpr int kQStages =
      2 * kQBytes + 2 * Stages * kKVBytes + kBarBytes(2) + 1024 <= kSmemPerBlockMax ? 2 : 1;
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQStages * kQBytes;
  static constexpr int kOffV = kOffK + Stages * kKVBytes;
  static constexpr int kOffBar = kOffV + Stages * kKVBytes;
  // Per Q slot full_q, empty_q; then per stage full_k, empty_k, full_v, empty_v.
  static constexpr int kNumBars = 2 * kQStages + 4 * Stages;
  static constexpr int kSmemBytes = kOffBar + kNumBars * 8 + 1024;  // + slack to align the base to 1024
  static_assert(kSmemBytes <= kSmemPerBlockMax, "tile does not fit the 227 KiB of shared memory per block");

  // Each block's Q K^T, softmax and P V one after another in a warpgroup (fa3_kernel.cuh,
  // consumer_serial), where S, P and O together would not fit the consumer's registers:
  // hd256 with 128-key blocks (O 128 + S 64 + P 32 per thread). Ping-pong still keeps
  // the tensor cores fed, one warpgroup's softmax under the other's GEMMs.
  static constexpr bool kSerialBlocks = HeadDim / 2 + BlockN / 2 + BlockN / 4 > 200;

  // Ping-pong GEMM turns between consumer warpgroups: one warpgroup issues its
  // GEMMs while the other's softmax runs. Taken where the problem's length,
  // max(seqlen_q, seqlen_k), exceeds kTurnsAbove (0: always; kNoTurns: never).
  // Measured on the H200, paper-fwd, cuDNN in the same runs, without turns against
  // with them (PERF_NOTES fa3-hd64-no-turns, fa3-turns-by-length):
  //  - hd64, two warpgroups (128x128): 4-12 % faster at every length: never;
  //  - hd64, three warpgroups (192x128): 6-9 % slower: always;
  //  - hd128 (two warpgroups): 1.5-1.9 % faster up to 2048 non-causal, 0.7 %
  //    causal up to 1024 and level at 2048, 0.7 % slower at 4096: above 2048;
  //  - hd256, serial 128x128: 1-3 % slower (up to 2048): always;
  //  - hd256, 128x80: 2-3 % faster at 4096-16384: never.
  static constexpr int64_t kNoTurns = INT64_MAX;
  static constexpr int64_t kTurnsAbove = FA3_PINGPONG == 0 || kConsumerWGs < 2 ? kNoTurns
                                         : HeadDim == 64                        ? (kConsumerWGs == 3 ? 0 : kNoTurns)
                                         : HeadDim == 128                       ? 2048
                                         : kSerialBlocks                        ? 0
                                                                                : kNoTurns;
  static constexpr bool kPingPong = Turns;
  static_assert(!Turns || kTurnsAbove != kNoTurns, "an instantiation with turns for a tile that never takes them");

  // A tile's last P V issued with the next tile's first Q K^T (fa3_kernel.cuh).
  // Measured on the H200 (PERF_NOTES fa3-cross-tile-pipeline): +0-9 % with two consumer warpgroups
  // (hd128, hd256), -5 % with three (hd64 192x128, 160 registers each), so off there.
  static constexpr bool kCrossTile = kConsumerWGs == 2 && !kSerialBlocks;

  // The tile walk divides through FastDivs (fa3_scheduler.cuh, tile_at) with two
  // consumer warpgroups: H200, paper-fwd, same-run A/B (PERF_NOTES
  // fa3-short-fast-div): +11 % at hd64 causal 512, +2-5 % at hd128, +0.5-1 % at
  // hd256. The three-warpgroup kernel (hd64 192x128) measured 1-2 % slower with
  // it from 2048 tokens, its block loop's SASS unchanged; it keeps '/' and '%'.
  static constexpr bool kFastDivWalk = kConsumerWGs == 2;

  // The warpgroup index read from lane 0 (sm90::warpgroup_index), so that the
  // consumer's Q descriptors and turn barriers stay in uniform registers: 16-38
  // fewer instructions per block. H200, paper-fwd 512-8192, same-run A/B (PERF_NOTES
  // fa3-uniform-warpgroup-index): hd128 +0.3-2.8 %, hd256 +1-2 % from 4096, hd64
  // 128x128 +0.4-2.7 %; the three-warpgroup hd64 192x128 4 % slower with it, so
  // threadIdx.x / 128 there.
  static constexpr bool kUniformWarpgroupIndex = kConsumerWGs == 2;

  // A row's block maximum folded as a tree rather than a chain (fa3_softmax.cuh,
  // block_row_max) at head_dim 64 only. Same-run A/B on the H200 (PERF_NOTES
  // fa3-softmax-tree-max): hd64 +1-2 %, hd256 non-causal -1 %, hd128 +-1 % (and
  // e4m3 hd128 -1-3 %, which keeps the chain too).
  static constexpr bool kTreeMax = HeadDim == 64;

  // The cross-tile consumer walks its block's tiles for rows that see no key only
  // where there can be any (fa3_args.cuh, some_rows_see_no_key): same-run A/Bs on
  // the H200 (PERF_NOTES fa3-short-empty-tile-walk) gave +1-2.4 % at hd64 causal
  // 512-1024, and at hd256 +0.2-0.6 % non-causal, -0.5-1 % causal 512-1024. Not at
  // head_dim 128: there the branch made ptxas reorder the block loop (the first
  // exponential 94 instructions after the wait for P V instead of 51), 0.6-1 %
  // slower from 2048, so the walk always runs.
  static constexpr bool kSkipNeedlessEmptyWalk = HeadDim != 128;

  // Register split after setmaxnreg (one block per SM; common/register_split.h): the
  // producer only issues TMA, the consumers hold S, P and O.
  static constexpr int kProducerRegs = kConsumerWGs == 3 ? 32 : (kConsumerWGs == 2 ? 24 : 56);
  static constexpr int kConsumerRegs = kConsumerWGs == 3 ? 160 : (kConsumerWGs == 2 ? 240 : 240);
  static_assert(register_split_fits(kConsumerWGs, kProducerRegs, kConsumerRegs),
                "register split over the block's launch allocation (common/register_split.h)");

  // Which tiles each block runs, in what order (fa3_scheduler.cuh).
  using Scheduler = fa3::StaticPersistentScheduler;
};

}  // namespace fa
