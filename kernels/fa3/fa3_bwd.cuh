// fa3 backward: FlashAttention-3's backward pass for Hopper (sm_90a), as the
// registry sees it. Three launches on the stream: the pre-pass (D and LSE per
// row), the main kernel (fa3_bwd_kernel.cuh: dK, dV and the float32 dQ
// accumulator), the post-pass (dQ in the dtype). This file builds their
// parameters (TMA maps, workspace, tile order) and says which problems it runs.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/attn_params.h"
#include "fa3/fa3_bwd_fault.h"
#include "fa3/fa3_bwd_kernel.cuh"
#include "fa3/fa3_bwd_prepost.cuh"
#include "fa3/fa3_fwd.cuh"  // current_device_sm, aligned16

namespace fa {

// Fault: a bug planted for fa-check's self-test (fa3_bwd_fault.h); the registry's
// instances leave it at none.
template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages,
          Fa3BwdFault Fault = Fa3BwdFault::none>
struct Fa3BwdKernel {
  using Clean = fa3::Fa3BwdTraits<HeadDim, BlockM, BlockN, Warps, Stages>;
  using Cfg = std::conditional_t<Fault == Fa3BwdFault::none, Clean, fa3::Fa3BwdPlanted<Clean, Fault>>;
  static constexpr ElemType kDtype = std::is_same_v<Elem, __nv_bfloat16> ? ElemType::bf16 : ElemType::f16;

  // Workspace: the float32 dQ accumulator, LSE * log2(e), D and the
  // deterministic mode's counters, each over whole Q blocks, 256-byte aligned.
  struct Workspace {
    int64_t dq_accum = 0, lse_log2 = 0, dpsum = 0, semaphore = 0, total = 0;  // byte offsets, size
    explicit Workspace(const AttnParams& p) {
      const int64_t blocks = int64_t(p.batch) * p.heads * num_m_blocks(p);
      auto take = [&](int64_t bytes) {
        const int64_t at = total;
        total += (bytes + 255) / 256 * 256;
        return at;
      };
      dq_accum = take(blocks * BlockM * HeadDim * 4);
      lse_log2 = take(blocks * BlockM * 4);
      dpsum = take(blocks * BlockM * 4);
      semaphore = take(blocks * 4);
    }
  };
  static int num_m_blocks(const AttnParams& p) { return (p.seqlen_q + BlockM - 1) / BlockM; }

  static int64_t workspace_bytes(const AttnParams& p) { return Workspace(p).total; }

  static const char* unsupported(const AttnParams& p) {
    if (p.dtype != kDtype) return "fa3: instance built for another dtype";
    if (p.head_dim != HeadDim) return "fa3: instance built for another head_dim";
    if (p.seqlen_q < 1 || p.seqlen_k < 1) return "fa3: seqlen_q and seqlen_k must be >= 1";
    if (p.heads_kv < 1 || p.heads % p.heads_kv != 0) return "fa3: heads must be a multiple of heads_kv";
    // TMA loads (Q, K, V, dO) and stores (dK, dV), 16-byte loads of O and dO in
    // the pre-pass: 16-byte aligned bases, strides in multiples of 8 elements.
    const void* ptrs[] = {p.q, p.k, p.v, p.o, p.dout, p.dq, p.dk, p.dv};
    for (const void* ptr : ptrs)
      if (!fa3::aligned16(ptr)) return "fa3: Q, K, V, O, dO, dQ, dK, dV must be 16-byte aligned";
    const int64_t strides[] = {p.q_batch_stride,  p.q_row_stride,  p.q_head_stride,  p.k_batch_stride,
                               p.k_row_stride,    p.k_head_stride, p.v_batch_stride, p.v_row_stride,
                               p.v_head_stride,   p.o_batch_stride, p.o_row_stride,  p.o_head_stride,
                               p.do_batch_stride, p.do_row_stride, p.do_head_stride, p.dq_batch_stride,
                               p.dq_row_stride,   p.dq_head_stride, p.dk_batch_stride, p.dk_row_stride,
                               p.dk_head_stride,  p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride};
    for (int64_t s : strides)
      if (s % 8 != 0) return "fa3: strides must be multiples of 8 elements (TMA)";
    if (p.o == nullptr || p.lse == nullptr || p.dout == nullptr)
      return "fa3: the backward needs the forward's O and LSE, and dO";
    if (p.dq == nullptr || p.dk == nullptr || p.dv == nullptr) return "fa3: the backward needs dQ, dK, dV buffers";
    const int sm = fa3::current_device_sm();
    if (sm < 0) return "fa3: no CUDA device";
    if (sm != 90) return "fa3: needs an sm_90 (Hopper) GPU";
    return nullptr;
  }

  static int launch(const AttnParams& p, cudaStream_t stream) {
    const Workspace ws(p);
    if (p.workspace == nullptr || p.workspace_bytes < ws.total) return int(cudaErrorInvalidValue);
    uint8_t* base = static_cast<uint8_t*>(p.workspace);
    float* dq_accum = reinterpret_cast<float*>(base + ws.dq_accum);
    float* lse_log2 = reinterpret_cast<float*>(base + ws.lse_log2);
    float* dpsum = reinterpret_cast<float*>(base + ws.dpsum);
    int* semaphore = reinterpret_cast<int*>(base + ws.semaphore);
    const int m_blocks = num_m_blocks(p);
    const int64_t blocks = int64_t(p.batch) * p.heads * m_blocks;
    cudaError_t err;

    // Contributions of every K/V block are added to the accumulator: it starts at 0.
    if ((err = cudaMemsetAsync(dq_accum, 0, size_t(blocks) * BlockM * HeadDim * 4, stream)) != cudaSuccess)
      return int(err);
    if (p.deterministic && (err = cudaMemsetAsync(semaphore, 0, size_t(blocks) * 4, stream)) != cudaSuccess)
      return int(err);

    {  // Pre-pass: D and LSE * log2(e).
      fa3::BwdPrepArgs pa{};
      pa.o = p.o;
      pa.dout = p.dout;
      pa.lse = p.lse;
      pa.lse_log2 = lse_log2;
      pa.dpsum = dpsum;
      pa.o_batch_stride = p.o_batch_stride;
      pa.o_row_stride = p.o_row_stride;
      pa.o_head_stride = p.o_head_stride;
      pa.do_batch_stride = p.do_batch_stride;
      pa.do_row_stride = p.do_row_stride;
      pa.do_head_stride = p.do_head_stride;
      pa.heads = p.heads;
      pa.seqlen_q = p.seqlen_q;
      pa.rows = m_blocks * BlockM;
      pa.total_rows = blocks * BlockM;
      const int64_t threads = pa.total_rows * (HeadDim / 8);
      fa3::fa3_bwd_prepare<Elem, HeadDim><<<unsigned((threads + 255) / 256), 256, 0, stream>>>(pa);
      if ((err = cudaGetLastError()) != cudaSuccess) return int(err);
    }

    {  // Main kernel: one block per K/V block of each (batch, kv head).
      const bool bf16 = kDtype == ElemType::bf16;
      fa3::BwdArgs a{};
      // Q-side maps (Q, dO) box block_m rows of a query head, K-side ones (K, V and
      // the dK, dV stores) block_n rows of a kv head.
      auto map = [&](CUtensorMap* m, const void* base, bool q_side, int64_t row, int64_t head, int64_t batch) {
        return sm90::make_bshd_tensor_map(m, base, bf16, HeadDim, q_side ? p.seqlen_q : p.seqlen_k,
                                          q_side ? p.heads : p.heads_kv, p.batch, row, head, batch,
                                          q_side ? BlockM : BlockN);
      };
      const cudaError_t map_errs[] = {
          map(&a.tma_q, p.q, true, p.q_row_stride, p.q_head_stride, p.q_batch_stride),
          map(&a.tma_do, p.dout, true, p.do_row_stride, p.do_head_stride, p.do_batch_stride),
          map(&a.tma_k, p.k, false, p.k_row_stride, p.k_head_stride, p.k_batch_stride),
          map(&a.tma_v, p.v, false, p.v_row_stride, p.v_head_stride, p.v_batch_stride),
          map(&a.tma_dk, p.dk, false, p.dk_row_stride, p.dk_head_stride, p.dk_batch_stride),
          map(&a.tma_dv, p.dv, false, p.dv_row_stride, p.dv_head_stride, p.dv_batch_stride)};
      for (cudaError_t e : map_errs)
        if (e != cudaSuccess) return int(e);
      a.lse_log2 = lse_log2;
      a.dpsum = dpsum;
      a.dq_accum = dq_accum;
      a.dq_semaphore = semaphore;
      a.batch = p.batch;
      a.heads = p.heads;
      a.heads_kv = p.heads_kv;
      a.seqlen_q = p.seqlen_q;
      a.seqlen_k = p.seqlen_k;
      a.num_m_blocks = m_blocks;
      a.num_n_blocks = (p.seqlen_k + BlockN - 1) / BlockN;
      a.softmax_scale = p.softmax_scale;
      a.softmax_scale_log2 = p.softmax_scale_log2;
      a.causal = p.causal ? 1 : 0;
      a.deterministic = p.deterministic ? 1 : 0;
      // Causal tiles go longest first within groups of (batch, kv head) pairs
      // whose Q and dO fill half the L2 (fa3_bwd_args.cuh, bwd_tile_at).
      const int64_t pairs = int64_t(p.batch) * p.heads_kv;
      int64_t group = 1;
      if (p.causal) {
        int dev = 0, l2_bytes = 0;
        if ((err = cudaGetDevice(&dev)) != cudaSuccess) return int(err);
        if ((err = cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev)) != cudaSuccess) return int(err);
        const int64_t qdo_bytes = int64_t(p.kv_group()) * p.seqlen_q * HeadDim * 2 * 2;
        group = (int64_t(l2_bytes) / 2) / (qdo_bytes > 0 ? qdo_bytes : 1);
      }
      a.group_bh = int(group < 1 ? 1 : group > pairs ? pairs : group);
      const int64_t tiles = pairs * a.num_n_blocks;
      if (tiles > 0x7fffffff) return int(cudaErrorInvalidConfiguration);

      auto kernel = fa3::fa3_bwd_kernel<Elem, Cfg>;
      err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes);
      if (err != cudaSuccess) return int(err);
      kernel<<<unsigned(tiles), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(a);
      if ((err = cudaGetLastError()) != cudaSuccess) return int(err);
    }

    {  // Post-pass: dQ = softmax_scale * accumulator, in the dtype.
      fa3::BwdConvertArgs ca{};
      ca.dq_accum = dq_accum;
      ca.dq = p.dq;
      ca.dq_batch_stride = p.dq_batch_stride;
      ca.dq_row_stride = p.dq_row_stride;
      ca.dq_head_stride = p.dq_head_stride;
      ca.heads = p.heads;
      ca.seqlen_q = p.seqlen_q;
      ca.num_m_blocks = m_blocks;
      // planted dq_unscaled: the post-pass is handed no softmax scale
      ca.softmax_scale = Fault == Fa3BwdFault::dq_unscaled ? 1.f : p.softmax_scale;
      ca.total_float4 = blocks * BlockM * HeadDim / 4;
      fa3::fa3_bwd_convert_dq<Elem, BlockM, HeadDim><<<unsigned((ca.total_float4 + 255) / 256), 256, 0, stream>>>(ca);
      if ((err = cudaGetLastError()) != cudaSuccess) return int(err);
    }
    return 0;
  }
};

}  // namespace fa
