// cuDNN's FP8 (e4m3) attention forward as a backend operation graph: the
// shape a plan is built for and the tensor ids of its variant pack. The plan
// itself is an SdpaPlan (sdpa_graph.h), as for the 16-bit graphs.
#pragma once
#include <compare>
#include <cstdint>

#include "cudnn/backend.h"
#include "cudnn/sdpa_graph.h"

namespace fa::cudnn {

// Everything an FP8 plan depends on. Pointers, the softmax scale and the
// scale/descale factors travel in the variant pack: one plan per shape.
struct Fp8SdpaShape {
  int64_t batch = 0, heads = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0;
  // Element strides (batch, head, row) of our BSHD buffers; head_dim stride is 1.
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, o_stride[3] = {};
  // O: CUDNN_DATA_BFLOAT16 (descaled, scale_o = 1) or CUDNN_DATA_FP8_E4M3 (scaled by scale_o).
  cudnnDataType_t o_type = CUDNN_DATA_BFLOAT16;
  bool causal = false;  // bottom-right aligned, as the 16-bit graphs
  auto operator<=>(const Fp8SdpaShape&) const = default;
};

// Non-virtual tensor ids. The causal mask's by-value lengths keep the 16-bit
// graph's ids (kUidSeqlenK, kUidSeqlenQ), which these do not collide with.
enum Fp8SdpaUid : int64_t {
  kFp8UidQ = 101, kFp8UidK, kFp8UidV,  // e4m3 codes
  kFp8UidO,                            // o_type
  kFp8UidStats,                        // float [b, h, s_q, 1]: natural-log LSE
  kFp8UidAttnScale,                    // by value, float: softmax scale
  kFp8UidNegInf,                       // by value, float: what masked scores become
  kFp8UidDescaleQ, kFp8UidDescaleK, kFp8UidDescaleV,  // device float [1,1,1,1] each
  kFp8UidDescaleS, kFp8UidScaleS,      // device float: P is rounded as P * scale_s, undone by descale_s
  kFp8UidScaleO,                       // device float (e4m3 O) or by value 1.0 (bf16 O)
  kFp8UidAmaxS, kFp8UidAmaxO,          // device float outputs: max |P|, max |O| before scale_o
};

// Builds the FP8 forward graph for `shape` and finalizes the first engine
// configuration cuDNN's heuristics offer that accepts it. Throws Failure with
// cuDNN's reason, naming the operation or attribute that failed.
SdpaPlan build_sdpa_fp8_plan(cudnnHandle_t handle, const Fp8SdpaShape& shape);

}  // namespace fa::cudnn
