// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/graph_builder.h"

namespace fa::cudnn {
namespace {
constexpr int64_t kAlignment = 16;  // bytes; our buffers come from cudaMalloc (256-byte aligned)
}  // namespace

const Desc& GraphBuilder::tensor(int64_t uid, cudnnDataType_t dt, std::vector<int64_t> dims,
                                 std::vector<int64_t> strides, bool by_value) {
  const bool is_virtual = uid == 0;
  if (is_virtual) uid = next_virtual_++;
  else uids_.push_back(uid);
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

void GraphBuilder::matmul(const Desc& a, const Desc& b, const Desc& c, GemmOverride override_by) {
  Desc m(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  m.set_dtype(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT, "matmul compute type").finalize("matmul");
  Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "matmul A")
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "matmul B")
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, "matmul C")
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, m, "matmul desc");
  if (override_by.m) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, *override_by.m, "matmul M override");
  if (override_by.n) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, *override_by.n, "matmul N override");
  if (override_by.k) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, *override_by.k, "matmul K override");
  op.finalize("matmul op");
  store(std::move(m));
  add_op(std::move(op));
}

void GraphBuilder::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const Desc& x, const Desc* b,
                             const Desc* t, const Desc& y, int64_t axis) {
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

void GraphBuilder::reduction(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
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

void GraphBuilder::reshape(const Desc& x, const Desc& y) {
  Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, "reshape X")
      .set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, "reshape Y")
      .finalize("reshape op");
  add_op(std::move(op));
}

Desc GraphBuilder::finalize_graph(cudnnHandle_t handle) {
  Desc g(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  g.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle")
      .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops_.size()), ops_.data(),
           "graph ops")
      .finalize("operation graph");
  return g;
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
