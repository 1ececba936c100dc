// The attention forward written as cuDNN backend operations. cuDNN matches this
// pattern (two matmuls around a softmax, an optional mask) and runs it as one
// fused flash-attention kernel; the graph is the contract, not the execution.
//
//   S    = Q K^T                                  matmul, float32
//   S    = S * scale
//   S    = (row + seqlen_k - seqlen_q >= col) ? S : -inf     causal only
//   M    = rowmax(S);  E = exp(S - M);  Z = rowsum(E)
//   LSE  = M + log(Z)                             -> Stats, float32 [b, h, s_q, 1]
//   P    = E / Z                                  rounded to the io dtype
//   O    = P V
//
// The op structure follows the composite form cuDNN's own frontend emits for
// backends before 9.21 (the mask as generated row/column indices and a binary
// select, softmax as reductions and pointwise ops); we build it directly on the
// backend API so the build needs no frontend headers.
// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/sdpa_graph.h"

#include <cuda_runtime.h>

#include "cudnn/engine_choice.h"
#include "cudnn/graph_builder.h"
#include "cudnn/sdpa_masks.h"

namespace fa::cudnn {

void DeviceFree::operator()(void* p) const { cudaFree(p); }

SdpaPlan build_sdpa_plan(cudnnHandle_t handle, const SdpaShape& s) {
  SdpaPlan out;
  GraphBuilder g(out.keep);
  const int64_t b = s.batch, h = s.heads, hk = s.heads_kv, sq = s.seqlen_q, sk = s.seqlen_k, d = s.head_dim;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;

  // Our buffers are BSHD; cuDNN's dims are (batch, head, row, col) with our strides.
  const Desc& q = g.tensor(kUidQ, s.io, {b, h, sq, d}, {s.q_stride[0], s.q_stride[1], s.q_stride[2], 1});
  // K^T: the same memory as K with the last two dims (and strides) swapped.
  const Desc& kt = g.tensor(kUidK, s.io, {b, hk, d, sk}, {s.k_stride[0], s.k_stride[1], 1, s.k_stride[2]});
  const Desc& v = g.tensor(kUidV, s.io, {b, hk, sk, d}, {s.v_stride[0], s.v_stride[1], s.v_stride[2], 1});
  const Desc& o = g.tensor(kUidO, s.io, {b, h, sq, d}, {s.o_stride[0], s.o_stride[1], s.o_stride[2], 1});
  // Stats [b, h, s_q, 1] packed is exactly our LSE layout [batch, heads, seqlen_q].
  const Desc& stats = g.tensor(kUidStats, f32, row_dims(s), row_strides(s));

  // S = Q K^T, scaled
  const Desc& s0 = g.virt(f32, score_dims(s), score_strides(s));
  g.matmul(q, kt, s0);
  const Desc& s1 = score_op(g, s, CUDNN_POINTWISE_MUL, f32, s0, &g.scalar(kUidScale, f32));
  const Desc& scores = s.causal ? causal_mask(g, s1, s, g.scalar(kUidNegInf, f32)) : s1;

  // softmax with its log-sum-exp
  const Desc& m = g.virt(f32, row_dims(s), row_strides(s));
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scores, m);
  const Desc& centered = score_op(g, s, CUDNN_POINTWISE_SUB, f32, scores, &m);
  const Desc& e = score_op(g, s, CUDNN_POINTWISE_EXP, f32, centered);
  const Desc& z = g.virt(f32, row_dims(s), row_strides(s));
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
  const Desc& log_z = g.virt(f32, row_dims(s), row_strides(s));
  g.pointwise(CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, log_z);
  g.pointwise(CUDNN_POINTWISE_ADD, f32, m, &log_z, nullptr, stats);
  // P goes into the second matmul in the io dtype, as in flash attention.
  const Desc& p = g.virt(s.io, score_dims(s), score_strides(s));
  g.pointwise(CUDNN_POINTWISE_DIV, f32, e, &z, nullptr, p);

  // O = P V
  g.matmul(p, v, o);

  Desc graph = g.finalize_graph(handle);
  EngineChoice c = choose_engine(handle, graph, /*deterministic_only=*/false);
  out.keep.push_back(std::move(graph));
  out.plan = std::move(c.plan);
  out.engine_index = c.engine_index;
  out.nondeterministic = c.nondeterministic;
  out.uids = g.uids();
  out.workspace_bytes = c.workspace_bytes;
  return out;
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
