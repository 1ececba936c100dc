// Which query rows (and, for gradients, key columns) are compared against the
// reference on a large problem.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace fa {

// All rows when seqlen_q <= max_rows; otherwise a seeded random subset of about
// max_rows that always includes the first and last row of every `block`-sized
// boundary region it touches, rows 0 and seqlen_q-1. Sorted, unique.
std::vector<int64_t> sample_rows(const AttnProblem&, int64_t max_rows, int block, uint64_t seed);

// The key columns whose dK and dV a backward check compares, chosen like
// sample_rows over seqlen_k: all when seqlen_k <= max_cols, else about max_cols
// with columns 0 and seqlen_k-1, every touched `block`'s first and last column
// and, under causal, the columns where the mask starts to cut: the last key row
// 0 sees and the one after it. A seed gives other picks than sample_rows does.
std::vector<int64_t> sample_cols(const AttnProblem&, int64_t max_cols, int block, uint64_t seed);

}  // namespace fa
