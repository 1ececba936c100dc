// The FP8 (e4m3) attention forward written as cuDNN backend operations, in the
// order cudnn-frontend's sdpa_fp8 node expands it (its composite softmax, as
// for backends before 9.21). cuDNN matches the pattern and runs its fused FP8
// flash kernel (Hopper and later); the graph states the result, not the
// execution:
//
//   S     = Q K^T                       matmul, e4m3 x e4m3 -> float32
//   S     = S * attn_scale * descale_q * descale_k
//   S     = (row + seqlen_k - seqlen_q >= col) ? S : lowest     causal only
//   M     = rowmax(S);  E = exp(S - M);  Z = rowsum(E)
//   Stats = M + log(Z)                  float32 [b, h, s_q, 1]
//   P     = E / Z                       float32
//   amax_s = max |P|                    float [1, 1, 1, 1]
//   P8    = P * scale_s                 rounded to e4m3
//   O'    = P8 V                        matmul, e4m3 x e4m3 -> float32
//   O'    = O' * descale_s * descale_v
//   O     = O' * scale_o                rounded to o_type (bf16 or e4m3)
//   amax_o = max |O'|                   float [1, 1, 1, 1]
//
// Masked scores become float's lowest finite value, not -inf, as the
// frontend's FP8 node does. The causal mask is the 16-bit graphs' bottom-right
// one (sdpa_masks.h); with equal lengths it is the plain row >= col the
// frontend emits.
// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/sdpa_fp8_graph.h"

#include <string>
#include <utility>

#include "cudnn/engine_choice.h"
#include "cudnn/graph_builder.h"
#include "cudnn/sdpa_masks.h"

namespace fa::cudnn {
namespace {

// Runs one graph step; a cuDNN failure inside it comes out naming the step.
template <typename F>
decltype(auto) step(const char* name, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (Failure& e) {
    e.what = std::string("fp8 sdpa graph, ") + name + ": " + e.what;
    throw;
  }
}

// The score layout and masks only read batch, heads and the lengths.
SdpaShape score_shape(const Fp8SdpaShape& s) {
  SdpaShape out;
  out.batch = s.batch, out.heads = s.heads, out.heads_kv = s.heads_kv;
  out.seqlen_q = s.seqlen_q, out.seqlen_k = s.seqlen_k, out.head_dim = s.head_dim;
  out.causal = s.causal;
  return out;
}

}  // namespace

SdpaPlan build_sdpa_fp8_plan(cudnnHandle_t handle, const Fp8SdpaShape& s) {
  SdpaPlan out;
  GraphBuilder g(out.keep);
  const SdpaShape ss = score_shape(s);
  const int64_t b = s.batch, h = s.heads, hk = s.heads_kv, sq = s.seqlen_q, sk = s.seqlen_k, d = s.head_dim;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, e4m3 = CUDNN_DATA_FP8_E4M3;
  const bool o_fp8 = s.o_type == CUDNN_DATA_FP8_E4M3;

  // Our buffers are BSHD; cuDNN's dims are (batch, head, row, col) with our strides.
  const std::vector<int64_t> o_dims = {b, h, sq, d};
  const std::vector<int64_t> o_strides = {s.o_stride[0], s.o_stride[1], s.o_stride[2], 1};
  const Desc& q = step("tensor Q", [&]() -> const Desc& {
    return g.tensor(kFp8UidQ, e4m3, {b, h, sq, d}, {s.q_stride[0], s.q_stride[1], s.q_stride[2], 1});
  });
  // K^T: the same memory as K with the last two dims (and strides) swapped.
  const Desc& kt = step("tensor K^T", [&]() -> const Desc& {
    return g.tensor(kFp8UidK, e4m3, {b, hk, d, sk}, {s.k_stride[0], s.k_stride[1], 1, s.k_stride[2]});
  });
  const Desc& v = step("tensor V", [&]() -> const Desc& {
    return g.tensor(kFp8UidV, e4m3, {b, hk, sk, d}, {s.v_stride[0], s.v_stride[1], s.v_stride[2], 1});
  });
  const Desc& o = step("tensor O", [&]() -> const Desc& { return g.tensor(kFp8UidO, s.o_type, o_dims, o_strides); });
  const Desc& stats = step("tensor Stats", [&]() -> const Desc& {
    return g.tensor(kFp8UidStats, f32, row_dims(ss), row_strides(ss));
  });
  // Per-tensor factors live in device memory ([1,1,1,1] float), as the
  // frontend's FP8 samples and Transformer Engine pass them; the softmax scale
  // and the mask value are by-value scalars. With a bf16 O nothing is
  // quantized on the way out, so scale_o is the by-value 1 the frontend's
  // users pass for a 16-bit O.
  auto device_scalar = [&](int64_t uid, const char* name) -> const Desc& {
    return step(name, [&]() -> const Desc& { return g.tensor(uid, f32, {1, 1, 1, 1}, {1, 1, 1, 1}); });
  };
  const Desc& attn_scale = step("tensor attn_scale", [&]() -> const Desc& { return g.scalar(kFp8UidAttnScale, f32); });
  const Desc& descale_q = device_scalar(kFp8UidDescaleQ, "tensor descale_q");
  const Desc& descale_k = device_scalar(kFp8UidDescaleK, "tensor descale_k");
  const Desc& descale_v = device_scalar(kFp8UidDescaleV, "tensor descale_v");
  const Desc& descale_s = device_scalar(kFp8UidDescaleS, "tensor descale_s");
  const Desc& scale_s = device_scalar(kFp8UidScaleS, "tensor scale_s");
  const Desc& scale_o = o_fp8 ? device_scalar(kFp8UidScaleO, "tensor scale_o")
                              : step("tensor scale_o", [&]() -> const Desc& { return g.scalar(kFp8UidScaleO, f32); });
  const Desc& amax_s = device_scalar(kFp8UidAmaxS, "tensor amax_s");
  const Desc& amax_o = device_scalar(kFp8UidAmaxO, "tensor amax_o");

  // bmm1: S = Q K^T, then the softmax scale and the two descales, in the frontend's order
  const Desc& s0 = step("bmm1 (Q K^T)", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, score_dims(ss), score_strides(ss));
    g.matmul(q, kt, y);
    return y;
  });
  const Desc& s1 = step("attn_scale", [&]() -> const Desc& {
    return score_op(g, ss, CUDNN_POINTWISE_MUL, f32, s0, &attn_scale);
  });
  const Desc& s2 = step("descale_q", [&]() -> const Desc& {
    return score_op(g, ss, CUDNN_POINTWISE_MUL, f32, s1, &descale_q);
  });
  const Desc& s3 = step("descale_k", [&]() -> const Desc& {
    return score_op(g, ss, CUDNN_POINTWISE_MUL, f32, s2, &descale_k);
  });
  const Desc& scores = !s.causal ? s3 : step("causal mask", [&]() -> const Desc& {
    return causal_mask(g, s3, ss, g.scalar(kFp8UidNegInf, f32));
  });

  // softmax with its log-sum-exp
  const Desc& m = step("softmax rowmax", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, row_dims(ss), row_strides(ss));
    g.reduction(CUDNN_REDUCE_TENSOR_MAX, scores, y);
    return y;
  });
  const Desc& centered = step("softmax sub max", [&]() -> const Desc& {
    return score_op(g, ss, CUDNN_POINTWISE_SUB, f32, scores, &m);
  });
  const Desc& e = step("softmax exp", [&]() -> const Desc& {
    return score_op(g, ss, CUDNN_POINTWISE_EXP, f32, centered);
  });
  const Desc& z = step("softmax rowsum", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, row_dims(ss), row_strides(ss));
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, y);
    return y;
  });
  step("softmax stats (max + log sum)", [&] {
    const Desc& log_z = g.virt(f32, row_dims(ss), row_strides(ss));
    g.pointwise(CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, log_z);
    g.pointwise(CUDNN_POINTWISE_ADD, f32, m, &log_z, nullptr, stats);
  });
  const Desc& p = step("softmax div", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, score_dims(ss), score_strides(ss));
    g.pointwise(CUDNN_POINTWISE_DIV, f32, e, &z, nullptr, y);
    return y;
  });

  // amax of P, then P scaled into e4m3's range for the second matmul
  step("amax_s", [&] { g.reduction(CUDNN_REDUCE_TENSOR_AMAX, p, amax_s); });
  const Desc& p8 = step("scale_s", [&]() -> const Desc& {
    const Desc& y = g.virt(e4m3, score_dims(ss), score_strides(ss));
    g.pointwise(CUDNN_POINTWISE_MUL, f32, p, &scale_s, nullptr, y);
    return y;
  });

  // bmm2: O = P8 V, descaled, scaled to O's type; amax before scale_o
  const Desc& o0 = step("bmm2 (P V)", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, o_dims, o_strides);
    g.matmul(p8, v, y);
    return y;
  });
  const Desc& o1 = step("descale_s", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, o_dims, o_strides);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, o0, &descale_s, nullptr, y);
    return y;
  });
  const Desc& o2 = step("descale_v", [&]() -> const Desc& {
    const Desc& y = g.virt(f32, o_dims, o_strides);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, o1, &descale_v, nullptr, y);
    return y;
  });
  step("scale_o", [&] { g.pointwise(CUDNN_POINTWISE_MUL, f32, o2, &scale_o, nullptr, o); });
  step("amax_o", [&] { g.reduction(CUDNN_REDUCE_TENSOR_AMAX, o2, amax_o); });

  Desc graph = step("operation graph", [&] { return g.finalize_graph(handle); });
  EngineChoice c = step("engine choice", [&] { return choose_engine(handle, graph, /*deterministic_only=*/false); });
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
