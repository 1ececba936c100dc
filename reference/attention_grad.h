// The float64 reference gradients of attention. With O = softmax(scale * Q K^T
// + mask) V and a given dO, it returns dQ, dK, dV of L = sum(dO * O):
//   P = softmax rows, dV = P^T dO, dP = dO V^T, D_i = rowsum(dO * O)_i,
//   dS = P * (dP - D), dQ = scale * dS K, dK = scale * dS^T Q,
// accumulated in double with Eigen, under the forward's conventions: causal is
// bottom-right aligned, query head h reads KV head h / (heads / heads_kv) and a
// KV head's dK, dV sum over its query heads, a query row that sees no key
// contributes nothing (its dQ is 0).
//
// Sampled mode: dQ on chosen query rows, dK and dV on chosen key columns. A
// column's gradient sums over every row that sees it, so every row's LSE and
// D are computed (a full forward, in row chunks as GEMMs); beyond that the cost
// is rows * seqlen_k * d + cols * seqlen_q * d per head, not seqlen^2 * d.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensors.h"
#include "core/types.h"
#include "reference/reference.h"

namespace fa {

// Gradients on a subset: dQ on `rows`, dK and dV on `cols` (the checked set).
struct SampledGrads {
  std::vector<int64_t> rows;  // query rows, ascending
  std::vector<int64_t> cols;  // key columns, ascending
  std::vector<double> dq;     // [batch, rows.size(), heads, head_dim]
  std::vector<double> dk;     // [batch, cols.size(), heads_kv, head_dim]
  std::vector<double> dv;     // [batch, cols.size(), heads_kv, head_dim]
};

// Needs in.q, in.k, in.v and in.dout. rows / cols empty = every row / column.
// threads <= 0 = hardware concurrency. The pass computes the forward of every
// row anyway; it returns it, with `forward`, as the inputs a backward kernel
// takes: O (float32 of the float64 value, not rounded to the dtype) and the LSE
// (-inf for a row that sees no key); with `forward_rows`, in float64 on the
// checked rows, as reference_forward would give it on them.
SampledGrads reference_backward(const AttnProblem&, const HostInputs&, std::vector<int64_t> rows = {},
                                std::vector<int64_t> cols = {}, int threads = 0,
                                HostOutputs* forward = nullptr, ReferenceOutputs* forward_rows = nullptr);

}  // namespace fa
