#include "check/sampling.h"

#include <algorithm>
#include <initializer_list>
#include <random>

namespace fa {

namespace {

// Indices 0..n-1 when n <= max_count (max_count <= 0: no limit); otherwise the
// `must` indices in range plus random picks, each with the first and last index
// of its `block`-sized region (tile edges, the ragged last block included):
// about max_count in all. Sorted and unique, reproducible from the seed.
std::vector<int64_t> sample_indices(int64_t n, int64_t max_count, int block, uint64_t seed,
                                    std::initializer_list<int64_t> must) {
  std::vector<int64_t> out;
  if (n <= max_count || max_count <= 0) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  auto add = [&](int64_t i) {
    if (i < 0 || i >= n) return;
    out.push_back(i);
    if (block <= 0) return;
    const int64_t first = i / block * block;
    out.push_back(first);
    out.push_back(std::min(n, first + block) - 1);
  };
  for (int64_t i : must) add(i);
  const int64_t per_pick = block > 0 ? 3 : 1;
  const int64_t picks = std::max<int64_t>(1, (max_count - int64_t(out.size())) / per_pick);
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < picks; ++i) add(int64_t(gen() % uint64_t(n)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
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
