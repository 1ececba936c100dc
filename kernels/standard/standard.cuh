// Standard (unfused) attention: three passes over HBM, the baseline the
// FlashAttention papers measure against.
//   S = scale * Q K^T   cuBLAS batched GEMM, S stored in the dtype   [b*h, seqlen_q, seqlen_k]
//   P = softmax(S)      one kernel: mask, row max, exp, sum, LSE     [b*h, seqlen_q, seqlen_k]
//   O = P V             cuBLAS batched GEMM
// S and P live in p.workspace, so their N^2 size is what makes long sequences
// fail with status `oom`. GQA/MQA through per-head pointer arrays (any mapping).
// Takes any head_dim and ignores the tile parameters (instances use 0).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"
#include "common/shape_checks.cuh"

namespace fa {

// Defined in standard.cu (non-templated: one copy of the cuBLAS glue).
int64_t standard_workspace_bytes(const AttnParams& p);
const char* standard_unsupported(const AttnParams& p, ElemType dtype);
int standard_launch(const AttnParams& p, cudaStream_t stream);

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct StandardKernel {
  static int64_t workspace_bytes(const AttnParams& p) { return standard_workspace_bytes(p); }
  static const char* unsupported(const AttnParams& p) {
    return standard_unsupported(p, elem_type_of<Elem>());
  }
  static int launch(const AttnParams& p, cudaStream_t stream) { return standard_launch(p, stream); }
};

}  // namespace fa
