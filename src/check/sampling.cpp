#include "check/sampling.h"

#include <algorithm>
#include <random>
#include <set>

namespace fa {

// Random rows find errors anywhere; the first and last row of each touched
// block catch tile-edge bugs; the rows where causal visibility starts (0 and 1
// key seen) and the last row catch masking bugs. Exactly max_rows rows, so the
// documentation (and a row's rows_checked) can say how many were compared.
std::vector<int64_t> sample_rows(const AttnProblem& p, int64_t max_rows, int block, uint64_t seed) {
  const int64_t nq = p.seqlen_q;
  std::vector<int64_t> rows;
  if (nq <= max_rows || max_rows <= 0) {  // max_rows <= 0: no limit
    for (int64_t r = 0; r < nq; ++r) rows.push_back(r);
    return rows;
  }
  std::set<int64_t> chosen;
  auto take = [&](int64_t r) {
    if (r >= 0 && r < nq && int64_t(chosen.size()) < max_rows) chosen.insert(r);
  };
  // A row comes with the first and last row of its block (while there is room).
  auto with_block = [&](int64_t r) {
    take(r);
    if (block <= 0 || r < 0 || r >= nq) return;
    const int64_t first = r / block * block;
    take(first);
    take(std::min(nq, first + block) - 1);
  };
  with_block(0);
  with_block(nq - 1);  // also the (possibly ragged) last block
  if (p.causal && nq > p.seqlen_k) {  // last row seeing no key, first seeing one
    with_block(nq - p.seqlen_k - 1);
    with_block(nq - p.seqlen_k);
  }
  std::mt19937_64 gen(seed);
  // nq > max_rows, so fresh rows keep coming; the cap on misses only guards a
  // sample that is almost every row, which the scan below completes.
  for (int64_t misses = 0; int64_t(chosen.size()) < max_rows && misses < 64 * max_rows;) {
    const size_t before = chosen.size();
    with_block(int64_t(gen() % uint64_t(nq)));
    if (chosen.size() == before) ++misses;
  }
  for (int64_t r = 0; int64_t(chosen.size()) < max_rows; ++r) take(r);
  return std::vector<int64_t>(chosen.begin(), chosen.end());
}

}  // namespace fa
