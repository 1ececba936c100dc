// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/sdpa_masks.h"

namespace fa::cudnn {
namespace {

// Row (axis 2) or column (axis 3) index of every score, int32.
const Desc& index_of(GraphBuilder& g, const Desc& scores, const SdpaShape& s, int64_t axis) {
  const Desc& idx = g.virt(CUDNN_DATA_INT32, score_dims(s), score_strides(s));
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, idx, axis);
  return idx;
}

// BINARY_SELECT: y = keep ? scores : neg_inf
const Desc& select(GraphBuilder& g, const Desc& scores, const Desc& keep, const SdpaShape& s, const Desc& neg_inf) {
  return score_op(g, s, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scores, &neg_inf, &keep);
}

}  // namespace

const Desc& score_op(GraphBuilder& g, const SdpaShape& s, cudnnPointwiseMode_t mode, cudnnDataType_t dt,
                     const Desc& x, const Desc* b, const Desc* t) {
  const Desc& y = g.virt(dt, score_dims(s), score_strides(s));
  g.pointwise(mode, dt, x, b, t, y);
  return y;
}

const Desc& causal_mask(GraphBuilder& g, const Desc& scores, const SdpaShape& s, const Desc& neg_inf) {
  const Desc& row = index_of(g, scores, s, 2);
  const Desc& col = index_of(g, scores, s, 3);
  const Desc* diag = &row;
  if (s.seqlen_q != s.seqlen_k) {
    const Desc& row_plus = score_op(g, s, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row,
                                    &g.scalar(kUidSeqlenK, CUDNN_DATA_INT32));
    diag = &score_op(g, s, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row_plus, &g.scalar(kUidSeqlenQ, CUDNN_DATA_INT32));
  }
  const Desc& keep = score_op(g, s, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, *diag, &col);
  return select(g, scores, keep, s, neg_inf);
}

const Desc& padding_mask(GraphBuilder& g, const Desc& scores, const SdpaShape& s, const Desc& len_q,
                         const Desc& len_k, const Desc& neg_inf) {
  const Desc& row_in = score_op(g, s, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, index_of(g, scores, s, 2), &len_q);
  const Desc& col_in = score_op(g, s, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, index_of(g, scores, s, 3), &len_k);
  const Desc& keep = score_op(g, s, CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_in, &col_in);
  return select(g, scores, keep, s, neg_inf);
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
