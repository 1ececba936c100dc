// cuDNN's fused attention, forward and backward, as backend operation graphs:
// the shape a plan is built for, the tensor ids of its variant pack, and the
// plan that runs it.
#pragma once
#include <compare>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "cudnn/backend.h"
#include "cudnn/sdpa_pass.h"

namespace fa::cudnn {

// Everything a plan depends on. Pointers and the softmax scale are not here:
// they travel in the variant pack, so one plan serves every launch of a shape.
struct SdpaShape {
  SdpaPass pass = SdpaPass::fwd;
  cudnnDataType_t io = CUDNN_DATA_BFLOAT16;  // Q, K, V, O, dO, dQ, dK, dV (HALF or BFLOAT16)
  int64_t batch = 0, heads = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0;
  // Element strides (batch, head, row) of our BSHD buffers; head_dim stride is 1.
  int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, o_stride[3] = {};
  // Backward only (zero in a forward shape).
  int64_t do_stride[3] = {}, dq_stride[3] = {}, dk_stride[3] = {}, dv_stride[3] = {};
  bool causal = false;         // bottom-right aligned
  bool deterministic = false;  // backward only: dQ without atomics
  auto operator<=>(const SdpaShape&) const = default;
};

// Unique ids of the non-virtual tensors, the keys of the variant pack.
enum SdpaUid : int64_t {
  kUidQ = 1, kUidK, kUidV, kUidO, kUidStats,
  kUidScale,      // by value, float: softmax scale
  kUidNegInf,     // by value, float: what masked scores become
  kUidSeqlenK,    // by value, int32: shifts the causal diagonal to the bottom right
  kUidSeqlenQ,    // by value, int32
  // backward
  kUidDO, kUidDQ, kUidDK, kUidDV,
  kUidOne,        // by value, float 1 (the frontend's dropout-free softmax-sum scale)
  kUidSoftmaxSum, // float [b, h, s_q, 1] = rowsum(dO * O), in our workspace
  kUidDQAccum,    // float [b, h, s_q, d], dQ accumulated across key blocks, in our workspace
  kUidPadLenQ,    // int32 [b, 1, 1, 1] device tensors of a padding mask that keeps
  kUidPadLenK,    //   every row and column (a cuDNN <= 9.15.0 workaround, see README)
};

// Device memory a plan owns (the padding mask's lengths), freed with it.
struct DeviceFree {
  void operator()(void* p) const;
};
using DeviceBytes = std::unique_ptr<void, DeviceFree>;

struct SdpaPlan {
  Desc plan;                      // finalized execution plan
  int64_t engine_index = -1;      // cuDNN's global engine index (for logs)
  bool nondeterministic = false;  // the engine carries cuDNN's nondeterministic note
  std::vector<int64_t> uids;      // the graph's non-virtual tensors: the variant pack's keys
  // What the caller's workspace holds: [scratch we own | cuDNN's workspace].
  int64_t workspace_bytes = 0;         // the whole of it (what workspace_bytes(p) reports)
  int64_t cudnn_workspace_offset = 0;  // where cuDNN's part starts (256-byte aligned)
  int64_t softmax_sum_offset = -1, dq_accum_offset = -1;  // backward scratch, -1 if absent
  DeviceBytes pad_lengths;        // int32 [2][batch]: seqlen_q then seqlen_k (padding workaround)
  std::deque<Desc> keep;          // the graph's descriptors, alive as long as the plan
                                  // (a deque: references stay valid as it grows)
};

// Builds the graph for `shape` (its pass) and finalizes the first engine
// configuration cuDNN's heuristics offer that accepts it. Throws Failure with
// cuDNN's reason.
SdpaPlan build_sdpa_plan(cudnnHandle_t handle, const SdpaShape& shape);
SdpaPlan build_sdpa_bwd_plan(cudnnHandle_t handle, const SdpaShape& shape);

}  // namespace fa::cudnn
