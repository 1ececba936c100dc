// The float64 reference: O = softmax(scale * Q K^T + mask) V and the per-row
// log-sum-exp, accumulated in double with Eigen, for all query rows or a chosen
// subset (cost rows * N * d instead of N^2 * d). Causal is bottom-right aligned
// (row i sees keys j <= i + seqlen_k - seqlen_q); a row that sees no key has
// O = 0 and LSE = -inf. GQA: query head h reads kv head h / (heads / heads_kv).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensors.h"
#include "core/types.h"

namespace fa {

struct ReferenceOutputs {
  std::vector<int64_t> rows;  // the query rows computed, ascending
  std::vector<double> o;      // [batch, rows.size(), heads, head_dim]
  std::vector<double> lse;    // [batch, heads, rows.size()]
};

// rows empty = every query row. threads <= 0 = hardware concurrency.
ReferenceOutputs reference_forward(const AttnProblem&, const HostInputs&,
                                   std::vector<int64_t> rows = {}, int threads = 0);

}  // namespace fa
