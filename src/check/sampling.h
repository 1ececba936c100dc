// Which query rows are compared against the reference on a large problem.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace fa {

// All rows when seqlen_q <= max_rows; otherwise exactly max_rows rows: 0 and
// seqlen_q-1, for causal with seqlen_q > seqlen_k the last row that sees no key
// and the first that sees one, each with the first and last row of its
// `block`-sized block, then seeded random rows, each with its block's first and
// last row, until max_rows (a block edge is dropped when the count is reached).
// Sorted, unique.
std::vector<int64_t> sample_rows(const AttnProblem&, int64_t max_rows, int block, uint64_t seed);

}  // namespace fa
