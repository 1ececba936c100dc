// Which query rows are compared against the reference on a large problem.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace fa {

// All rows when seqlen_q <= max_rows; otherwise a seeded random subset of about
// max_rows that always includes the first and last row of every `block`-sized
// boundary region it touches, rows 0 and seqlen_q-1. Sorted, unique.
std::vector<int64_t> sample_rows(const AttnProblem&, int64_t max_rows, int block, uint64_t seed);

}  // namespace fa
