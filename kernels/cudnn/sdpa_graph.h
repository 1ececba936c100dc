// cuDNN's fused attention forward as a backend operation graph: the shape it
// is built for, the tensor ids of its variant pack, and the plan that runs it.
#pragma once
#include <compare>
#include <cstdint>
#include <deque>
#include <string>

#include "cudnn/backend.h"

namespace fa::cudnn {

// Everything a plan depends on. Pointers and the softmax scale are not here:
// they travel in the variant pack, so one plan serves every launch of a shape.
struct SdpaShape {
  cudnnDataType_t io = CUDNN_DATA_BFLOAT16;  // Q, K, V, O (HALF or BFLOAT16)
  int64_t batch = 0, heads = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0;
  // Element strides (batch, head, row) of our BSHD buffers; head_dim stride is 1.
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, o_stride[3] = {};
  bool causal = false;  // bottom-right aligned
  auto operator<=>(const SdpaShape&) const = default;
};

// Unique ids of the non-virtual tensors, the keys of the variant pack.
enum SdpaUid : int64_t {
  kUidQ = 1, kUidK, kUidV, kUidO, kUidStats,
  kUidScale,     // by value, float: softmax scale
  kUidNegInf,    // by value, float: what masked scores become
  kUidSeqlenK,   // by value, int32: shifts the causal diagonal to the bottom right
  kUidSeqlenQ,   // by value, int32
};

struct SdpaPlan {
  Desc plan;                   // finalized execution plan
  int64_t workspace_bytes = 0;
  int64_t engine_index = -1;   // cuDNN's global engine index (for logs)
  bool shifted_diagonal = false;  // the graph holds the seqlen_k - seqlen_q shift
  std::deque<Desc> keep;       // the graph's descriptors, alive as long as the plan
                               // (a deque: references stay valid as it grows)
};

// Builds the graph for `shape` and finalizes the first engine configuration
// cuDNN's heuristics offer that accepts it. Throws Failure with cuDNN's reason.
SdpaPlan build_sdpa_plan(cudnnHandle_t handle, const SdpaShape& shape);

}  // namespace fa::cudnn
