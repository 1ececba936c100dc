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

#include <vector>

namespace fa::cudnn {
namespace {

constexpr int64_t kAlignment = 16;  // bytes; our buffers come from cudaMalloc

class GraphBuilder {
 public:
  explicit GraphBuilder(std::deque<Desc>& keep) : keep_(keep) {}

  // A tensor descriptor; `uid` 0 allocates a virtual (on-chip) tensor id.
  const Desc& tensor(int64_t uid, cudnnDataType_t dt, std::vector<int64_t> dims,
                     std::vector<int64_t> strides, bool by_value = false) {
    bool is_virtual = uid == 0;
    if (is_virtual) uid = next_virtual_++;
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set_dtype(CUDNN_ATTR_TENSOR_DATA_TYPE, dt, "tensor data type")
        .set_i64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims, "tensor dims")
        .set_i64s(CUDNN_ATTR_TENSOR_STRIDES, strides, "tensor strides")
        .set_i64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid, "tensor uid")
        .set_i64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kAlignment, "tensor alignment")
        .set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, is_virtual, "tensor is_virtual");
    if (by_value) t.set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true, "tensor is_by_value");
    t.finalize("tensor");
    return store(std::move(t));
  }
  // A by-value scalar, broadcast against 4-D operands.
  const Desc& scalar(int64_t uid, cudnnDataType_t dt) {
    return tensor(uid, dt, {1, 1, 1, 1}, {1, 1, 1, 1}, /*by_value=*/true);
  }
  // A virtual tensor with the same dims/strides as the score matrix or a row statistic.
  const Desc& virt(cudnnDataType_t dt, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& strides) {
    return tensor(0, dt, dims, strides);
  }

  void matmul(const Desc& a, const Desc& b, const Desc& c) {
    Desc m(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    m.set_dtype(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT, "matmul compute type").finalize("matmul");
    Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "matmul A")
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "matmul B")
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, "matmul C")
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, m, "matmul desc")
        .finalize("matmul op");
    store(std::move(m));
    add_op(std::move(op));
  }

  // y = mode(x[, b[, t]]). `axis` >= 0 only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const Desc& x, const Desc* b,
                 const Desc* t, const Desc& y, int64_t axis = -1) {
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode")
        .set_dtype(CUDNN_ATTR_POINTWISE_MATH_PREC, math, "pointwise math precision");
    if (axis >= 0) pw.set_i64(CUDNN_ATTR_POINTWISE_AXIS, axis, "pointwise axis");
    pw.finalize("pointwise");
    Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, "pointwise desc")
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, "pointwise X");
    if (b != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b, "pointwise B");
    if (t != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t, "pointwise T");
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, "pointwise Y").finalize("pointwise op");
    store(std::move(pw));
    add_op(std::move(op));
  }

  void reduction(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
    Desc r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "reduction op")
        .set_dtype(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT, "reduction compute type")
        .finalize("reduction");
    Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, "reduction X")
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, "reduction Y")
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r, "reduction desc")
        .finalize("reduction op");
    store(std::move(r));
    add_op(std::move(op));
  }

  Desc finalize_graph(cudnnHandle_t handle) {
    std::vector<cudnnBackendDescriptor_t> raw(ops_.begin(), ops_.end());
    Desc g(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    g.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle")
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()),
             raw.data(), "graph ops")
        .finalize("operation graph");
    return g;
  }

 private:
  const Desc& store(Desc d) {
    keep_.push_back(std::move(d));
    return keep_.back();
  }
  void add_op(Desc op) { ops_.push_back(store(std::move(op)).get()); }

  std::deque<Desc>& keep_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = 100;
};

// Tries the engine configs cuDNN's heuristics rank for `graph` in `mode`, in
// order; returns the first plan that finalizes, or an empty Desc with `why`.
Desc first_plan(cudnnHandle_t handle, const Desc& graph, cudnnBackendHeurMode_t mode,
                int64_t* engine_index, std::string* why) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph")
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode")
      .finalize("engine heuristics");
  int64_t count = 0;
  cudnnStatus_t st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  if (st != CUDNN_STATUS_SUCCESS) throw Failure{st, describe(st, "heuristics result count")};
  if (count == 0) {
    *why = "cuDNN's heuristics offer no engine for this graph";
    return {};
  }
  std::vector<Desc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data());
  if (st != CUDNN_STATUS_SUCCESS) throw Failure{st, describe(st, "heuristics results")};
  for (int64_t i = 0; i < got; ++i) {
    Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle")
        .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[size_t(i)], "plan engine config");
    std::string msg;
    if (plan.try_finalize(&msg) == CUDNN_STATUS_SUCCESS) {
      Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      cudnnBackendDescriptor_t e = engine.get();
      int64_t n = 0;
      if (cudnnBackendGetAttribute(cfgs[size_t(i)].get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) == CUDNN_STATUS_SUCCESS)
        cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 engine_index);
      return plan;
    }
    if (why->empty()) *why = msg;  // the best-ranked engine's reason says most
  }
  return {};
}

}  // namespace

SdpaPlan build_sdpa_plan(cudnnHandle_t handle, const SdpaShape& s) {
  SdpaPlan out;
  GraphBuilder g(out.keep);
  const int64_t b = s.batch, h = s.heads, hk = s.heads_kv, sq = s.seqlen_q, sk = s.seqlen_k,
                d = s.head_dim;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;

  // Our buffers are BSHD; cuDNN's dims are (batch, head, row, col) with our strides.
  const Desc& q = g.tensor(kUidQ, s.io, {b, h, sq, d}, {s.q_stride[0], s.q_stride[1], s.q_stride[2], 1});
  // K^T: the same memory as K with the last two dims (and strides) swapped.
  const Desc& kt = g.tensor(kUidK, s.io, {b, hk, d, sk}, {s.k_stride[0], s.k_stride[1], 1, s.k_stride[2]});
  const Desc& v = g.tensor(kUidV, s.io, {b, hk, sk, d}, {s.v_stride[0], s.v_stride[1], s.v_stride[2], 1});
  const Desc& o = g.tensor(kUidO, s.io, {b, h, sq, d}, {s.o_stride[0], s.o_stride[1], s.o_stride[2], 1});
  // Stats [b, h, s_q, 1] packed is exactly our LSE layout [batch, heads, seqlen_q].
  const std::vector<int64_t> row_dims{b, h, sq, 1}, row_strides{h * sq, sq, 1, 1};
  const Desc& stats = g.tensor(kUidStats, f32, row_dims, row_strides);

  const std::vector<int64_t> s_dims{b, h, sq, sk}, s_strides{h * sq * sk, sq * sk, sk, 1};

  // S = Q K^T, scaled
  const Desc& s0 = g.virt(f32, s_dims, s_strides);
  g.matmul(q, kt, s0);
  const Desc& scale = g.scalar(kUidScale, f32);
  const Desc& s1 = g.virt(f32, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_MUL, f32, s0, &scale, nullptr, s1);

  const Desc* scores = &s1;
  if (s.causal) {
    // keep S[row, col] where row + (seqlen_k - seqlen_q) >= col (bottom-right diagonal)
    const Desc& row = g.virt(CUDNN_DATA_INT32, s_dims, s_strides);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, s1, nullptr, nullptr, row, /*axis=*/2);
    const Desc& col = g.virt(CUDNN_DATA_INT32, s_dims, s_strides);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, s1, nullptr, nullptr, col, /*axis=*/3);
    const Desc* diag = &row;
    if (sq != sk) {  // top-left and bottom-right coincide when the lengths match
      const Desc& seqlen_k = g.scalar(kUidSeqlenK, CUDNN_DATA_INT32);
      const Desc& row_plus = g.virt(CUDNN_DATA_INT32, s_dims, s_strides);
      g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, &seqlen_k, nullptr, row_plus);
      const Desc& seqlen_q = g.scalar(kUidSeqlenQ, CUDNN_DATA_INT32);
      const Desc& row_shift = g.virt(CUDNN_DATA_INT32, s_dims, s_strides);
      g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row_plus, &seqlen_q, nullptr, row_shift);
      diag = &row_shift;
      out.shifted_diagonal = true;
    }
    const Desc& keep = g.virt(CUDNN_DATA_BOOLEAN, s_dims, s_strides);
    g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, *diag, &col, nullptr, keep);
    const Desc& neg_inf = g.scalar(kUidNegInf, f32);
    const Desc& masked = g.virt(f32, s_dims, s_strides);
    // BINARY_SELECT: y = t ? x : b
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, s1, &neg_inf, &keep, masked);
    scores = &masked;
  }

  // softmax with its log-sum-exp
  const Desc& m = g.virt(f32, row_dims, row_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, *scores, m);
  const Desc& centered = g.virt(f32, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_SUB, f32, *scores, &m, nullptr, centered);
  const Desc& e = g.virt(f32, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_EXP, f32, centered, nullptr, nullptr, e);
  const Desc& z = g.virt(f32, row_dims, row_strides);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
  const Desc& log_z = g.virt(f32, row_dims, row_strides);
  g.pointwise(CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, log_z);
  g.pointwise(CUDNN_POINTWISE_ADD, f32, m, &log_z, nullptr, stats);
  // P goes into the second matmul in the io dtype, as in flash attention.
  const Desc& p = g.virt(s.io, s_dims, s_strides);
  g.pointwise(CUDNN_POINTWISE_DIV, f32, e, &z, nullptr, p);

  // O = P V
  g.matmul(p, v, o);

  Desc graph = g.finalize_graph(handle);
  std::string why;
  out.plan = first_plan(handle, graph, CUDNN_HEUR_MODE_A, &out.engine_index, &why);
  if (!out.plan) out.plan = first_plan(handle, graph, CUDNN_HEUR_MODE_FALLBACK, &out.engine_index, &why);
  if (!out.plan) throw Failure{CUDNN_STATUS_NOT_SUPPORTED, "no cuDNN engine runs this graph: " + why};
  out.keep.push_back(std::move(graph));

  int64_t n = 0;
  cudnnStatus_t st = cudnnBackendGetAttribute(out.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                              CUDNN_TYPE_INT64, 1, &n, &out.workspace_bytes);
  if (st != CUDNN_STATUS_SUCCESS) throw Failure{st, describe(st, "plan workspace size")};
  return out;
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
