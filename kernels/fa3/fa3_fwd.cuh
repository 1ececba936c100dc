// fa3: the FlashAttention-3 forward for Hopper (sm_90a), as the registry sees
// it. The kernel itself is in fa3_kernel.cuh; this file builds its parameters
// (TMA maps, tile count, persistent grid) and says which problems it can run.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/attn_params.h"
#include "fa3/fa3_kernel.cuh"

namespace fa {

namespace fa3 {
// Compute capability of the current device, asked once per process; -1 when
// there is no usable device.
inline int current_device_sm() {
  static int sm = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return -1;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return -1;
    if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return -1;
    return major * 10 + minor;
  }();
  return sm;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }
}  // namespace fa3

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa3Kernel {
  using Cfg = fa3::Config<HeadDim, BlockM, BlockN, Warps, Stages>;
  static constexpr ElemType kDtype = std::is_same_v<Elem, __nv_bfloat16> ? ElemType::bf16 : ElemType::f16;

  static int64_t workspace_bytes(const AttnParams&) { return 0; }

  static const char* unsupported(const AttnParams& p) {
    if (p.dtype != kDtype) return "fa3: instance built for another dtype";
    if (p.head_dim != HeadDim) return "fa3: instance built for another head_dim";
    if (p.seqlen_q < 1 || p.seqlen_k < 1) return "fa3: seqlen_q and seqlen_k must be >= 1";
    if (p.heads_kv < 1 || p.heads % p.heads_kv != 0) return "fa3: heads must be a multiple of heads_kv";
    // TMA: global base 16-byte aligned, every stride a multiple of 16 bytes.
    if (!fa3::aligned16(p.q) || !fa3::aligned16(p.k) || !fa3::aligned16(p.v))
      return "fa3: Q, K, V must be 16-byte aligned (TMA)";
    const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride,
                               p.k_row_stride,   p.k_head_stride, p.v_batch_stride, p.v_row_stride,
                               p.v_head_stride};
    for (int64_t s : strides)
      if (s % 8 != 0) return "fa3: Q/K/V strides must be multiples of 8 elements (TMA)";
    if (p.o_row_stride % 8 || p.o_head_stride % 8 || p.o_batch_stride % 8 || !fa3::aligned16(p.o))
      return "fa3: O must allow 16-byte stores (16-byte aligned, strides multiples of 8 elements)";
    const int sm = fa3::current_device_sm();
    if (sm < 0) return "fa3: no CUDA device";
    if (sm != 90) return "fa3: needs an sm_90 (Hopper) GPU";
    return nullptr;
  }

  static int launch(const AttnParams& p, cudaStream_t stream) {
    const bool bf16 = kDtype == ElemType::bf16;
    fa3::Args a{};
    cudaError_t err;
    err = sm90::make_bshd_tensor_map(&a.tma_q, p.q, bf16, HeadDim, p.seqlen_q, p.heads, p.batch, p.q_row_stride,
                                     p.q_head_stride, p.q_batch_stride, BlockM);
    if (err != cudaSuccess) return int(err);
    err = sm90::make_bshd_tensor_map(&a.tma_k, p.k, bf16, HeadDim, p.seqlen_k, p.heads_kv, p.batch,
                                     p.k_row_stride, p.k_head_stride, p.k_batch_stride, BlockN);
    if (err != cudaSuccess) return int(err);
    err = sm90::make_bshd_tensor_map(&a.tma_v, p.v, bf16, HeadDim, p.seqlen_k, p.heads_kv, p.batch,
                                     p.v_row_stride, p.v_head_stride, p.v_batch_stride, BlockN);
    if (err != cudaSuccess) return int(err);
    a.o = p.o;
    a.lse = p.lse;
    a.batch = p.batch;
    a.heads = p.heads;
    a.heads_kv = p.heads_kv;
    a.seqlen_q = p.seqlen_q;
    a.seqlen_k = p.seqlen_k;
    a.o_batch_stride = p.o_batch_stride;
    a.o_row_stride = p.o_row_stride;
    a.o_head_stride = p.o_head_stride;
    a.softmax_scale = p.softmax_scale;
    a.softmax_scale_log2 = p.softmax_scale_log2;
    a.causal = p.causal ? 1 : 0;
    a.num_m_blocks = (p.seqlen_q + BlockM - 1) / BlockM;
    a.num_tiles = a.num_m_blocks * p.heads * p.batch;

    int dev = 0, num_sms = p.num_sms;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess) return int(err);
    if (num_sms <= 0 &&
        (err = cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
      return int(err);
    // Persistent: at most one block per SM, each walking tiles (tile_index). Built
    // with -DFA3_PERSISTENT=0 for the ablation: one block per tile, the hardware
    // scheduler starting each as an SM frees up (docs/PERF_NOTES.md fa3-persistent-grid).
#ifndef FA3_PERSISTENT
#define FA3_PERSISTENT 1
#endif
    const int grid = (!FA3_PERSISTENT || a.num_tiles < num_sms) ? a.num_tiles : num_sms;

    // Causal L2 groups (fa3_args.cuh, tile_at). Longest-first over all heads keeps
    // about grid / (batch*heads) tiles of each head in flight; from 3 up their K/V
    // reads overlap enough in L2 and the plain order balances best. Below that (hd128
    // seqlen 4096: 2 per head, 0.87x cuDNN) heads are grouped: enough for their K and
    // V (shared by kv_group() query heads) to fill half the L2, and at least 4 rounds
    // of tiles per group, because the static round-robin balances only where tile
    // lengths fall along the list, and a group restarts them (docs/PERF_NOTES.md fa3-causal-l2-groups).
    //
    // Except for short causal problems whose grouped order would overflow the L2:
    // where the 4-round minimum asks for a group whose K/V exceed the whole L2 (hd256
    // at seqlen 512: 132 heads, 66 MB, against 60 MB; ncu read 1.6x cuDNN's DRAM bytes),
    // and a head has at most 8 m_blocks, each head's tiles are listed together, longest
    // first (group_bh = 1 in tile_at). A round then runs grid / num_m_blocks whole
    // heads, each head's K/V read from HBM once by its tiles at the same time. Balance:
    // when 2 * grid is a multiple of num_m_blocks, the snake gives every block m_block m
    // in an even round and num_m_blocks - 1 - m in the next, so each pair of rounds
    // carries the same work on every block. Where the group fits in the L2 (hd64, hd128)
    // the same order measured 1-4 % slower than the grouped one: its tail mixes long
    // and short tiles (docs/PERF_NOTES.md fa3-short-causal-order).
    const int64_t bh_count = int64_t(p.heads) * p.batch;
    int64_t group = bh_count;
    if (p.causal && int64_t(grid) < 3 * bh_count) {
      int l2_bytes = 0;
      if ((err = cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev)) != cudaSuccess) return int(err);
      const int64_t kv_bytes_per_bh = int64_t(p.seqlen_k) * HeadDim * 2 * 2 / p.kv_group();
      const int64_t by_l2 = (int64_t(l2_bytes) / 2) / (kv_bytes_per_bh > 0 ? kv_bytes_per_bh : 1);
      const int64_t by_rounds = (4 * int64_t(grid) + a.num_m_blocks - 1) / a.num_m_blocks;
      group = by_l2 > by_rounds ? by_l2 : by_rounds;
      const bool overflows_l2 = by_rounds > 2 * by_l2;
      if (overflows_l2 && a.num_m_blocks <= 8 && (2 * grid) % a.num_m_blocks == 0) group = 1;
    }
    a.group_bh = int(group < 1 ? 1 : group > bh_count ? bh_count : group);

    auto kernel = fa3::fa3_fwd_kernel<Elem, Cfg>;
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes);
    if (err != cudaSuccess) return int(err);
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(a);
    return int(cudaGetLastError());
  }
};

}  // namespace fa
