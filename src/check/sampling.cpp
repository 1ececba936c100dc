#include "check/sampling.h"

#include <algorithm>
#include <random>

namespace fa {

// Random rows find errors anywhere; the first and last row of each touched
// block catch tile-edge bugs; the rows where causal visibility starts (0 and 1
// key seen) and the last row catch masking bugs.
std::vector<int64_t> sample_rows(const AttnProblem& p, int64_t max_rows, int block, uint64_t seed) {
  const int64_t nq = p.seqlen_q;
  std::vector<int64_t> rows;
  if (nq <= max_rows || max_rows <= 0) {  // max_rows <= 0: no limit
    for (int64_t r = 0; r < nq; ++r) rows.push_back(r);
    return rows;
  }
  // A row comes with the first and last row of its block.
  auto add = [&](int64_t r) {
    if (r < 0 || r >= nq) return;
    rows.push_back(r);
    if (block <= 0) return;
    const int64_t first = r / block * block;
    rows.push_back(first);
    rows.push_back(std::min(nq, first + block) - 1);
  };
  add(0);
  add(nq - 1);  // also the (possibly ragged) last block
  if (p.causal && nq > p.seqlen_k) {  // last row seeing no key, first seeing one
    add(nq - p.seqlen_k - 1);
    add(nq - p.seqlen_k);
  }
  // Each random pick brings its block's two edges: about max_rows in all.
  const int64_t per_pick = block > 0 ? 3 : 1;
  const int64_t picks = std::max<int64_t>(1, (max_rows - int64_t(rows.size())) / per_pick);
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < picks; ++i) add(int64_t(gen() % uint64_t(nq)));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace fa
