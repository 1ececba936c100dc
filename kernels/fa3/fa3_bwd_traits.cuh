// Compile-time shape of one fa3 backward instantiation: roles, shared-memory
// layout, register split, named barriers. Everything the backward kernel derives
// from its template arguments lives here, checked by static_asserts.
#pragma once
#include <cstdint>

#include "common/register_split.h"
#include "common/sm90/tma.cuh"
#include "fa3/fa3_bwd_fault.h"

namespace fa::fa3 {

template <int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa3BwdTraits {
  static constexpr int kHeadDim = HeadDim, kBlockM = BlockM, kBlockN = BlockN, kStages = Stages;
  static constexpr Fa3BwdFault kFault = Fa3BwdFault::none;  // see Fa3BwdPlanted

  // One producer warpgroup (warp 0 issues the TMA loads, warp 1 the dQ
  // reductions), then the consumers. A consumer owns 64 keys of the K/V block (a
  // wgmma is m64) and computes S^T = K Q^T for them, so P^T and dS^T come out
  // with keys as rows: the A operands of dV += P^T dO and dK += dS^T Q.
  //
  // Up to head_dim 128 each consumer holds dK and dV of its keys whole (2 x
  // head_dim / 2 registers) and the block has block_n / 64 of them. At 256 that
  // would be 256 registers: two consumers share the 64 keys, each holding dK and
  // dV for half of head_dim and computing S^T for half of the Q block; P^T and
  // dS^T then meet in shared memory (kSplitHd).
  static constexpr int kHdSplit = HeadDim == 256 ? 2 : 1;
  static constexpr bool kSplitHd = kHdSplit > 1;
  static constexpr int kKeyGroups = BlockN / 64;
  static constexpr int kConsumerWGs = kKeyGroups * kHdSplit;
  static constexpr int kConsumerThreads = 128 * kConsumerWGs;
  static constexpr int kConsumerWarps = 4 * kConsumerWGs;
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);
  static constexpr int kDkvCols = HeadDim / kHdSplit;  // dK, dV columns per consumer
  static constexpr int kSCols = BlockM / kHdSplit;     // S^T columns (queries) per consumer
  static_assert(BlockN % 64 == 0 && kConsumerWGs == 2, "two consumer warpgroups: block_n 128 (64 at head_dim 256)");
  static_assert(Warps * 32 == kThreads, "warps must be 12: a producer warpgroup + two consumers");
  static_assert(BlockM % 64 == 0 && BlockM <= 128, "block_m: 64 or 128 (the wgmma n of S^T, block_m / 4 statistics per thread)");
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 256, "head_dim: 64, 128 or 256");
  static_assert(kDkvCols <= 128, "dK and dV of one consumer: at most 2 x 64 registers");
  static_assert(Stages >= 2 && Stages <= 3, "stages: 2 or 3");

  // dQ = dS K is cut into m64 x n64 tasks (query rows x head_dim columns), the
  // same number per consumer: an m64n64 accumulator is 32 registers on top of
  // dK and dV.
  static constexpr int kDqTasksN = HeadDim / 64;
  static constexpr int kDqTasks = (BlockM / 64) * kDqTasksN;
  static constexpr int kDqTasksPerWG = kDqTasks / kConsumerWGs;
  static_assert(kDqTasks % kConsumerWGs == 0, "dQ tasks must split evenly over the consumers");
  static constexpr int kDqTaskFloats = 64 * 64;
  static constexpr int kDqTaskBytes = kDqTaskFloats * 4;
  // Tasks go to global memory from shared memory through the dQ warp's bulk
  // reduce-adds; at head_dim 256 the slots do not fit beside two Q and dO stages,
  // and the consumers add their tasks with red.global.add.v4.f32 from registers.
  static constexpr bool kDqViaSmem = !kSplitHd;
  static_assert(!kDqViaSmem || kDqTasksPerWG == 1, "a consumer keeping dK, dV whole has room for one dQ task");

  // Tiles in shared memory are panels of [rows][64] elements (128-byte rows,
  // 128B swizzle), one TMA box and one wgmma descriptor each: Q, dO, K, V as the
  // forward stores them, and dS^T (and P^T) as [block_n keys][64 queries] panels,
  // which dQ = dS K reads as an MN-major (transposed) A operand.
  static constexpr int kPanels = HeadDim / sm90::kPanelElems;
  static constexpr int kQPanelBytes = BlockM * sm90::kPanelBytes;   // Q and dO
  static constexpr int kKVPanelBytes = BlockN * sm90::kPanelBytes;  // K and V
  static constexpr int kDsPanelBytes = BlockN * sm90::kPanelBytes;  // dS^T, P^T: 64 queries wide
  static constexpr int kQBytes = kPanels * kQPanelBytes;
  static constexpr int kKVBytes = kPanels * kKVPanelBytes;
  static constexpr int kDsBytes = (BlockM / 64) * kDsPanelBytes;
  static constexpr int kRowStatBytes = BlockM * 4;  // LSE or D of one Q block
  static_assert(kQPanelBytes % 1024 == 0 && kKVPanelBytes % 1024 == 0, "panels must keep 1024-B swizzle atoms aligned");

  // dS^T is double-buffered where it fits: a consumer writes block i+1's dS^T
  // while the other may still read block i's in its dQ GEMM (block i+1's dS
  // barrier keeps a consumer from getting two blocks ahead). At head_dim 256 one
  // buffer each for P^T and dS^T, and a second barrier before they are rewritten.
  static constexpr int kDsStages = kSplitHd ? 1 : 2;
  static constexpr int kPBytes = kSplitHd ? kDsBytes : 0;

  // Shared memory: K | V | Q ring | dO ring | dS^T stages | P^T | dQ slots
  // (float32) | LSE ring | D ring | mbarriers.
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKVBytes;
  static constexpr int kOffQ = kOffV + kKVBytes;
  static constexpr int kOffDo = kOffQ + Stages * kQBytes;
  static constexpr int kOffDs = kOffDo + Stages * kQBytes;
  static constexpr int kOffP = kOffDs + kDsStages * kDsBytes;
  static constexpr int kOffDq = kOffP + kPBytes;
  static constexpr int kOffLse = kOffDq + (kDqViaSmem ? kDqTasks * kDqTaskBytes : 0);
  static constexpr int kOffDpsum = kOffLse + Stages * kRowStatBytes;
  static constexpr int kOffBar = kOffDpsum + Stages * kRowStatBytes;
  // kv_full, then per stage q_full, q_empty, do_full, do_empty.
  static constexpr int kNumBars = 1 + 4 * Stages;
  static constexpr int kSmemLimit = 227 * 1024;
  static constexpr int kSmemBytes = kOffBar + kNumBars * 8 + 1024;  // + slack to align the base to 1024
  static_assert(kSmemBytes <= kSmemLimit, "tile does not fit the 227 KiB of shared memory per block");

  // Register split after setmaxnreg (one block per SM; common/register_split.h): the
  // producer warps only issue copies; each consumer holds dK and dV (2 x
  // kDkvCols / 2 floats), S^T and dP^T (2 x kSCols / 2) and a dQ task (32).
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static_assert(register_split_fits(kConsumerWGs, kProducerRegs, kConsumerRegs),
                "register split over the block's launch allocation (common/register_split.h)");

  // Named barriers (0 is __syncthreads).
  static constexpr int kDsBar = 1;                 // consumers: this block's dS^T (and P^T) stored
  static constexpr int kPdsFreeBar = 2;            // consumers: the single P^T / dS^T buffers were read
  static constexpr int kDqFullBar = 3;             // + task: its dQ is in shared memory
  static constexpr int kDqEmptyBar = 3 + kDqTasks;  // + task: its dQ slot may be rewritten
  static constexpr int kDqBarThreads = 128 + 32;   // one consumer warpgroup + the dQ warp
  static constexpr int kDqDoneBar = kDqEmptyBar + kDqTasks;  // consumers: dQ reds issued (kSplitHd, deterministic)
  static_assert(kDqDoneBar <= 15, "named barrier ids 1..15");
};

// The same shape with a planted fault (fa3_bwd_fault.h). A type of its own rather
// than a sixth parameter of Fa3BwdTraits, so that the registered kernels keep
// their traits type, hence their symbol names as well as their code.
template <typename Traits, Fa3BwdFault Fault>
struct Fa3BwdPlanted : Traits {
  static_assert(Fault != Fa3BwdFault::none, "the clean kernel uses Fa3BwdTraits itself");
  static constexpr Fa3BwdFault kFault = Fault;
};

}  // namespace fa::fa3
