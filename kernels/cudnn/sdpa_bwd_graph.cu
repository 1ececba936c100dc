// The attention backward written as cuDNN backend operations, which cuDNN
// fuses into its flash-attention backward. With LSE from the forward (Stats)
// and tau the softmax scale:
//
//   D    = rowsum(dO * O) * 1                     -> softmax_sum, float32 [b, h, s_q, 1]
//   S    = tau Q K^T - LSE                        matmul, float32
//   S    = (row + seqlen_k - seqlen_q >= col) ? S : -inf     causal only
//   P    = exp(S)                                 the forward's softmax, recomputed
//   dV   = P^T dO                                 P^T a reshape, rounded to the io dtype
//   dS   = tau P * (dO V^T - D)
//   dK   = dS^T Q                                 dS^T a reshape, rounded to the io dtype
//   dQ   = dS K                                   through a float32 accumulator, or
//                                                 directly when deterministic
//
// GQA/MQA: dV and dK are first formed per query head, [b, h, s_k, d], then
// summed over each KV head's group by a reduction into [b, heads_kv, s_k, d].
//
// The op structure is that of the composite sdpa_backward cuDNN's frontend
// emits for 9.x backends (names there: mul_dO_O, reduce_dO_o, matmul_Q_KT,
// sub_s_m, exp_s, matmul_pT_dO, matmul_dO_VT, sub_dP_softmax_sum,
// mul_dP_exp_s, matmul_dST_Q, matmul_dS_K, identity_dQ). Its two non-virtual
// scratch tensors, softmax_sum and the dQ accumulator, live in the workspace
// the caller allocates (cuDNN 9.6+ clears the accumulator itself). A
// deterministic graph has no accumulator: dQ comes straight out of the dS K
// matmul, which makes cuDNN run its dP-workspace algorithm (dQ in a fixed
// order, with b * h * s_q * s_k * 2 bytes of its own workspace), as the
// frontend does for Hopper.
// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include <cuda_runtime.h>

#include <vector>

#include "cudnn/engine_choice.h"
#include "cudnn/graph_builder.h"
#include "cudnn/sdpa_graph.h"
#include "cudnn/sdpa_masks.h"

namespace fa::cudnn {
namespace {

constexpr int64_t kScratchAlign = 256;  // bytes: every part of our workspace starts aligned
int64_t align_up(int64_t n) { return (n + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

// cuDNN <= 9.15.0 can give non-finite gradients when s_k is not a multiple of
// 128 and no padding mask is present (the padded tail of the last key tile is
// not masked; it shows when a row's LSE is very negative). Its frontend then
// adds a padding mask whose lengths are the full lengths; so do we.
bool needs_padding_mask(const SdpaShape& s) { return cudnnGetVersion() <= 91500 && s.seqlen_k % 128 != 0; }

// The lengths of that padding mask on the device: seqlen_q for every batch,
// then seqlen_k. Plan building is outside any timed region, so a synchronous
// copy is fine here.
DeviceBytes upload_lengths(const SdpaShape& s) {
  std::vector<int32_t> host(size_t(2 * s.batch));
  for (int64_t i = 0; i < s.batch; ++i)
    host[size_t(i)] = int32_t(s.seqlen_q), host[size_t(s.batch + i)] = int32_t(s.seqlen_k);
  void* dev = nullptr;
  cudaError_t e = cudaMalloc(&dev, host.size() * sizeof(int32_t));
  if (e == cudaSuccess) e = cudaMemcpy(dev, host.data(), host.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
  if (e != cudaSuccess) {
    cudaFree(dev);
    cudaGetLastError();
    throw Failure{CUDNN_STATUS_ALLOC_FAILED, std::string("padding-mask lengths: ") + cudaGetErrorString(e)};
  }
  return DeviceBytes(dev);
}

// x [b, h, s_k, d] per query head -> y [b, heads_kv, s_k, d] summed over each
// group; a plain matmul into y when there is no group.
void grad_kv(GraphBuilder& g, const SdpaShape& s, const Desc& a, const Desc& b_op, const Desc& y,
             GemmOverride ov) {
  if (s.heads == s.heads_kv) {
    g.matmul(a, b_op, y, ov);
    return;
  }
  const int64_t h = s.heads, sk = s.seqlen_k, d = s.head_dim;
  const Desc& full = g.virt(s.io, {s.batch, h, sk, d}, {h * sk * d, sk * d, d, 1});
  g.matmul(a, b_op, full, ov);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, y);
}

}  // namespace

SdpaPlan build_sdpa_bwd_plan(cudnnHandle_t handle, const SdpaShape& s) {
  SdpaPlan out;
  GraphBuilder g(out.keep);
  const int64_t b = s.batch, h = s.heads, hk = s.heads_kv, sq = s.seqlen_q, sk = s.seqlen_k, d = s.head_dim;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  auto bhsd = [](const int64_t* st) { return std::vector<int64_t>{st[0], st[1], st[2], 1}; };
  // K^T and V^T: the same memory with the last two dims (and strides) swapped.
  auto bhds = [](const int64_t* st) { return std::vector<int64_t>{st[0], st[1], 1, st[2]}; };

  const Desc& q = g.tensor(kUidQ, s.io, {b, h, sq, d}, bhsd(s.q_stride));
  const Desc& kt = g.tensor(kUidK, s.io, {b, hk, d, sk}, bhds(s.k_stride));
  const Desc& vt = g.tensor(kUidV, s.io, {b, hk, d, sk}, bhds(s.v_stride));
  const Desc& o = g.tensor(kUidO, s.io, {b, h, sq, d}, bhsd(s.o_stride));
  const Desc& dout = g.tensor(kUidDO, s.io, {b, h, sq, d}, bhsd(s.do_stride));
  const Desc& stats = g.tensor(kUidStats, f32, row_dims(s), row_strides(s));
  const Desc& dq = g.tensor(kUidDQ, s.io, {b, h, sq, d}, bhsd(s.dq_stride));
  const Desc& dk = g.tensor(kUidDK, s.io, {b, hk, sk, d}, bhsd(s.dk_stride));
  const Desc& dv = g.tensor(kUidDV, s.io, {b, hk, sk, d}, bhsd(s.dv_stride));
  const Desc& scale = g.scalar(kUidScale, f32);

  GemmOverride qk{}, kq{};  // (M, N|K) = (s_q, s_k) or (s_k, s_q)
  const Desc* len_q = nullptr;
  const Desc* len_k = nullptr;
  if (needs_padding_mask(s)) {
    len_q = &g.tensor(kUidPadLenQ, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1});
    len_k = &g.tensor(kUidPadLenK, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1});
    qk = {len_q, len_k, nullptr};
    kq = {len_k, nullptr, len_q};
    out.pad_lengths = upload_lengths(s);
  }

  // D = rowsum(dO * O), the softmax-sum term
  const Desc& do_o = g.virt(f32, {b, h, sq, d}, {h * sq * d, sq * d, h * d, 1});
  g.pointwise(CUDNN_POINTWISE_MUL, f32, dout, &o, nullptr, do_o);
  const Desc& row_sum = g.virt(f32, row_dims(s), row_strides(s));
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o, row_sum);
  const Desc& softmax_sum = g.tensor(kUidSoftmaxSum, f32, row_dims(s), row_strides(s));
  g.pointwise(CUDNN_POINTWISE_MUL, f32, row_sum, &g.scalar(kUidOne, f32), nullptr, softmax_sum);

  // P = exp(tau Q K^T - LSE), masked
  const Desc& s0 = g.virt(f32, score_dims(s), score_strides(s));
  g.matmul(q, kt, s0, qk);
  const Desc& s1 = score_op(g, s, CUDNN_POINTWISE_MUL, f32, s0, &scale);
  const Desc* scores = &score_op(g, s, CUDNN_POINTWISE_SUB, f32, s1, &stats);
  const Desc* neg_inf = (len_q || s.causal) ? &g.scalar(kUidNegInf, f32) : nullptr;
  if (len_q) scores = &padding_mask(g, *scores, s, *len_q, *len_k, *neg_inf);
  if (s.causal) scores = &causal_mask(g, *scores, s, *neg_inf);
  const Desc& p = score_op(g, s, CUDNN_POINTWISE_EXP, f32, *scores);

  // the [b, h, s_k, s_q] view of a score-shaped tensor, in the io dtype
  const std::vector<int64_t> tdims{b, h, sk, sq}, tstrides{h * sq * sk, sq * sk, 1, sk};

  // dV = P^T dO
  const Desc& pt = g.virt(s.io, tdims, tstrides);
  g.reshape(p, pt);
  grad_kv(g, s, pt, dout, dv, kq);

  // dS = tau P * (dO V^T - D)
  const Desc& dp = g.virt(f32, score_dims(s), score_strides(s));
  g.matmul(dout, vt, dp, qk);
  const Desc& dp_centered = score_op(g, s, CUDNN_POINTWISE_SUB, f32, dp, &softmax_sum);
  const Desc& dp_p = score_op(g, s, CUDNN_POINTWISE_MUL, f32, dp_centered, &p);
  const Desc& ds = score_op(g, s, CUDNN_POINTWISE_MUL, f32, dp_p, &scale);

  // dK = dS^T Q
  const Desc& dst = g.virt(s.io, tdims, tstrides);
  g.reshape(ds, dst);
  grad_kv(g, s, dst, q, dk, kq);

  // dQ = dS K (K a reshape of K^T back to [b, heads_kv, s_k, d])
  const Desc& k = g.virt(f32, {b, hk, sk, d}, bhsd(s.k_stride));
  g.reshape(kt, k);
  const GemmOverride dq_ov{len_q, nullptr, len_k};
  if (s.deterministic) {
    g.matmul(ds, k, dq, dq_ov);
  } else {
    const Desc& acc = g.tensor(kUidDQAccum, f32, {b, h, sq, d}, {h * sq * d, sq * d, d, 1});
    g.matmul(ds, k, acc, dq_ov);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, f32, acc, nullptr, nullptr, dq);
  }

  Desc graph = g.finalize_graph(handle);
  EngineChoice c = choose_engine(handle, graph, s.deterministic);
  out.keep.push_back(std::move(graph));
  out.plan = std::move(c.plan);
  out.engine_index = c.engine_index;
  out.nondeterministic = c.nondeterministic;
  out.uids = g.uids();

  // Our scratch first, cuDNN's workspace after it.
  int64_t offset = 0;
  out.softmax_sum_offset = offset;
  offset += align_up(b * h * sq * int64_t(sizeof(float)));
  if (!s.deterministic) {
    out.dq_accum_offset = offset;
    offset += align_up(b * h * sq * d * int64_t(sizeof(float)));
  }
  out.cudnn_workspace_offset = offset;
  out.workspace_bytes = offset + c.workspace_bytes;
  return out;
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
