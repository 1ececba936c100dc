#include "check/sampling.h"

#include <algorithm>
#include <initializer_list>
#include <random>
#include <set>

namespace fa {

namespace {

// Indices 0..n-1 when n <= max_count (max_count <= 0: no limit); otherwise
// exactly max_count of them, so the documentation (and a row's rows_checked) can
// say how many were compared: the `must` indices in range, then seeded random
// picks, each with the first and last index of its `block`-sized region (tile
// edges, the ragged last block included), while there is room. Sorted, unique.
std::vector<int64_t> sample_indices(int64_t n, int64_t max_count, int block, uint64_t seed,
                                    std::initializer_list<int64_t> must) {
  std::vector<int64_t> out;
  if (n <= max_count || max_count <= 0) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::set<int64_t> chosen;
  auto take = [&](int64_t i) {
    if (i >= 0 && i < n && int64_t(chosen.size()) < max_count) chosen.insert(i);
  };
  auto with_block = [&](int64_t i) {
    take(i);
    if (block <= 0 || i < 0 || i >= n) return;
    const int64_t first = i / block * block;
    take(first);
    take(std::min(n, first + block) - 1);
  };
  for (int64_t i : must) with_block(i);
  std::mt19937_64 gen(seed);
  // n > max_count, so fresh indices keep coming; the cap on misses only guards
  // a sample that is almost every index, which the scan below completes.
  for (int64_t misses = 0; int64_t(chosen.size()) < max_count && misses < 64 * max_count;) {
    const size_t before = chosen.size();
    with_block(int64_t(gen() % uint64_t(n)));
    if (chosen.size() == before) ++misses;
  }
  for (int64_t i = 0; int64_t(chosen.size()) < max_count; ++i) take(i);
  return std::vector<int64_t>(chosen.begin(), chosen.end());
}

}  // namespace

// Random rows find errors anywhere; the first and last row of each touched
// block catch tile-edge bugs; the rows where causal visibility starts (0 and 1
// key seen) and the last row catch masking bugs.
std::vector<int64_t> sample_rows(const AttnProblem& p, int64_t max_rows, int block, uint64_t seed) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k;
  const bool blind_rows = p.causal && nq > nk;  // the last row seeing no key, the first seeing one
  return sample_indices(nq, max_rows, block, seed,
                        {0, nq - 1, blind_rows ? nq - nk - 1 : -1, blind_rows ? nq - nk : -1});
}

// A column's gradient sums over every row that sees it, so the columns that
// matter most are those whose set of rows the causal mask cuts first.
std::vector<int64_t> sample_cols(const AttnProblem& p, int64_t max_cols, int block, uint64_t seed) {
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k;
  const int64_t row0_last = nk - nq;  // the last key row 0 sees (causal; may be < 0)
  constexpr uint64_t kColumnStream = 0x5DEECE66Dull;
  return sample_indices(nk, max_cols, block, seed ^ kColumnStream,
                        {0, nk - 1, p.causal ? row0_last : -1, p.causal ? row0_last + 1 : -1});
}

}  // namespace fa
