// cuDNN's fused attention as a kernel family like ours: the template shape
// fa_add_instances / fa_add_bwd_instances expect (head_dim 0 = any, no tile),
// forwarding to the non-template code in cudnn_sdpa.cu. Graph building, plan
// choice and caching happen in workspace_bytes/unsupported, outside any timed
// region. CudnnSdpa runs the forward, CudnnSdpaBwd the backward (dQ, dK, dV
// from dO with the forward's O and LSE).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "cudnn/cudnn_sdpa.h"

namespace fa {

template <typename Elem, cudnn::SdpaPass kPass, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct CudnnSdpaEntry {
  static_assert(HeadDim == 0 && BlockM == 0 && BlockN == 0 && Warps == 0 && Stages == 0,
                "cudnn chooses its own kernel: instantiate with head_dim 0 and no tile");
  static_assert(std::is_same_v<Elem, __half> || std::is_same_v<Elem, __nv_bfloat16>,
                "cuDNN's fused attention takes fp16 or bf16");
  static constexpr ElemType kDtype = std::is_same_v<Elem, __half> ? ElemType::f16 : ElemType::bf16;

  static int64_t workspace_bytes(const AttnParams& p) {
    return p.dtype == kDtype ? cudnn_sdpa::workspace_bytes(p, kPass) : 0;
  }
  static const char* unsupported(const AttnParams& p) {
    if (p.dtype != kDtype) return "cudnn: this instantiation is for another dtype";
    return cudnn_sdpa::unsupported(p, kPass);
  }
  static int launch(const AttnParams& p, cudaStream_t stream) {
    if (p.dtype != kDtype) return int(cudaErrorInvalidValue);
    return cudnn_sdpa::launch(p, kPass, stream);
  }
};

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct CudnnSdpa : CudnnSdpaEntry<Elem, cudnn::SdpaPass::fwd, HeadDim, BlockM, BlockN, Warps, Stages> {};

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct CudnnSdpaBwd : CudnnSdpaEntry<Elem, cudnn::SdpaPass::bwd, HeadDim, BlockM, BlockN, Warps, Stages> {};

}  // namespace fa
