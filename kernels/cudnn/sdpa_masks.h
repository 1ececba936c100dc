// The pieces the forward and backward attention graphs share: the score
// matrix's layout and the masks applied to it.
#pragma once
#include <cstdint>
#include <vector>

#include "cudnn/graph_builder.h"
#include "cudnn/sdpa_graph.h"

namespace fa::cudnn {

// The virtual score matrix S = Q K^T, [b, h, s_q, s_k] packed.
inline std::vector<int64_t> score_dims(const SdpaShape& s) { return {s.batch, s.heads, s.seqlen_q, s.seqlen_k}; }
inline std::vector<int64_t> score_strides(const SdpaShape& s) {
  return {s.heads * s.seqlen_q * s.seqlen_k, s.seqlen_q * s.seqlen_k, s.seqlen_k, 1};
}
// A per-row statistic [b, h, s_q, 1] packed: the layout of our LSE.
inline std::vector<int64_t> row_dims(const SdpaShape& s) { return {s.batch, s.heads, s.seqlen_q, 1}; }
inline std::vector<int64_t> row_strides(const SdpaShape& s) { return {s.heads * s.seqlen_q, s.seqlen_q, 1, 1}; }

// y = mode(x[, b[, t]]) as a new virtual tensor of the score layout, type and
// math precision `dt`.
const Desc& score_op(GraphBuilder& g, const SdpaShape& s, cudnnPointwiseMode_t mode, cudnnDataType_t dt,
                     const Desc& x, const Desc* b = nullptr, const Desc* t = nullptr);

// scores where row + (seqlen_k - seqlen_q) >= col, else `neg_inf` (the
// bottom-right diagonal; the shift is two by-value int32 scalars, left out
// when the lengths are equal, where top-left and bottom-right coincide).
const Desc& causal_mask(GraphBuilder& g, const Desc& scores, const SdpaShape& s, const Desc& neg_inf);

// scores where row < len_q[b] and col < len_k[b], else `neg_inf`; len_q and
// len_k are int32 [b, 1, 1, 1] tensors.
const Desc& padding_mask(GraphBuilder& g, const Desc& scores, const SdpaShape& s, const Desc& len_q,
                         const Desc& len_k, const Desc& neg_inf);

}  // namespace fa::cudnn
