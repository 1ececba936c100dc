#include "reference/dense.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "core/errors.h"
#include "core/parallel.h"

namespace fa::ref {

MatD load_head(const std::vector<float>& t, int64_t seqlen, int heads, int d, int b, int h,
               double factor) {
  MatD m(seqlen, d);
  const int64_t row_stride = int64_t(heads) * d;
  const float* base = t.data() + (int64_t(b) * seqlen * heads + h) * d;
  for (int64_t j = 0; j < seqlen; ++j)
    for (int e = 0; e < d; ++e) m(j, e) = double(base[j * row_stride + e]) * factor;
  return m;
}

int64_t rows_per_chunk(int64_t n_rows, int64_t group, int threads) {
  const int64_t want_tasks = 4 * int64_t(resolve_threads(threads));
  const int64_t per = (n_rows * group + want_tasks - 1) / want_tasks;
  return std::clamp<int64_t>(per, 8, 64);
}

std::vector<int64_t> checked_indices(std::vector<int64_t> idx, int64_t n, const char* what) {
  if (idx.empty()) {
    idx.resize(n);
    std::iota(idx.begin(), idx.end(), int64_t{0});
    return idx;
  }
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  if (idx.front() < 0 || idx.back() >= n)
    throw UsageError(fmt::format("{} {} outside 0..{}", what,
                                 idx.front() < 0 ? idx.front() : idx.back(), n - 1));
  return idx;
}

}  // namespace fa::ref
