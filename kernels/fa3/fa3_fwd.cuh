// fa3: the FlashAttention-3 forward for Hopper (sm_90a), as the registry sees
// it. The kernel itself is in fa3_kernel.cuh; this file builds its parameters
// (TMA maps, the scheduler's plan) and says which problems it can run.
#pragma once
#include <cstdint>
#include <optional>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/attn_params.h"
#include "common/per_device.h"
#include "fa3/fa3_kernel.cuh"

namespace fa {

namespace fa3 {
// Compute capability of the current device, asked once per device (--devices
// may drive GPUs of different kinds from several host threads); -1 when there
// is no usable device (not cached: asked again next time).
inline int current_device_sm() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return -1;
  static PerDevice<int> known;
  return known
      .get(dev,
           [dev]() -> std::optional<int> {
             int major = 0, minor = 0;
             if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
                 cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
               return std::nullopt;
             return major * 10 + minor;
           })
      .value_or(-1);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }
}  // namespace fa3

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct Fa3Kernel {
  // The tile's shape and policies; launch() picks the turns (Traits::kTurnsAbove).
  using Traits = Fa3Traits<HeadDim, BlockM, BlockN, Warps, Stages, false>;
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
    int grid = 0;
    err = Traits::Scheduler::plan(p, BlockM, BlockN, HeadDim, &a.schedule, &grid);
    if (err != cudaSuccess) return int(err);

    if constexpr (Traits::kTurnsAbove == Traits::kNoTurns) {
      return launch_with<false>(a, grid, stream);
    } else if constexpr (Traits::kTurnsAbove == 0) {
      return launch_with<true>(a, grid, stream);
    } else {
      const int64_t length = p.seqlen_q > p.seqlen_k ? p.seqlen_q : p.seqlen_k;
      return length > Traits::kTurnsAbove ? launch_with<true>(a, grid, stream) : launch_with<false>(a, grid, stream);
    }
  }

 private:
  template <bool Turns>
  static int launch_with(const fa3::Args& a, int grid, cudaStream_t stream) {
    using T = Fa3Traits<HeadDim, BlockM, BlockN, Warps, Stages, Turns>;
    auto kernel = fa3::fa3_fwd_kernel<Elem, T>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes);
    if (err != cudaSuccess) return int(err);
    kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(a);
    return int(cudaGetLastError());
  }
};

}  // namespace fa
