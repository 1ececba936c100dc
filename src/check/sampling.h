// Which query rows (and, for gradients, key columns) are compared against the
// reference on a large problem.
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

// The key columns whose dK and dV a backward check compares, chosen like
// sample_rows over seqlen_k: all when seqlen_k <= max_cols, else exactly max_cols:
// columns 0 and seqlen_k-1 and, under causal, the columns where the mask starts
// to cut (the last key row 0 sees and the one after it), each with its
// `block`'s first and last column, then seeded random columns with theirs. A
// seed gives other picks than sample_rows does.
std::vector<int64_t> sample_cols(const AttnProblem&, int64_t max_cols, int block, uint64_t seed);

}  // namespace fa
