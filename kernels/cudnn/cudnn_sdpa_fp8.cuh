// cuDNN's FP8 (e4m3) attention forward as a kernel of the cudnn family: the
// template shape fa_add_instances expects (head_dim 0 = any, no tile),
// forwarding to the non-template code in fp8_entry.cu. It writes O in e4m3
// (kODtype): cuDNN's FP8 graph on Hopper refuses a 16-bit O (FP8.md), so the
// caller gives O's scale (AttnParams::o_scale) and dequantizes what it reads.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/attn_params.h"
#include "cudnn/fp8_entry.h"

namespace fa {

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct CudnnSdpaFp8 {
  static_assert(HeadDim == 0 && BlockM == 0 && BlockN == 0 && Warps == 0 && Stages == 0,
                "cudnn chooses its own kernel: instantiate with head_dim 0 and no tile");
  static_assert(std::is_same_v<Elem, uint8_t>, "cudnn fp8: e4m3 inputs are one-byte codes");
  static constexpr ElemType kODtype = ElemType::e4m3;

  static int64_t workspace_bytes(const AttnParams& p) { return cudnn_fp8_entry::workspace_bytes(p); }
  static const char* unsupported(const AttnParams& p) { return cudnn_fp8_entry::unsupported(p); }
  static int launch(const AttnParams& p, cudaStream_t stream) { return cudnn_fp8_entry::launch(p, stream); }
};

}  // namespace fa
