#include "check/hadamard.h"

#include <cmath>
#include <fmt/format.h>

#include "core/errors.h"

namespace fa {

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

RandomizedHadamard::RandomizedHadamard(int d, uint64_t seed) {
  if (d < 2 || (d & (d - 1)) != 0)
    throw UsageError(fmt::format("the Hadamard transform needs head_dim a power of two (64, 128, 256), got {}", d));
  // The signs are the seed's alone: one 64-bit draw gives 64 signs, in order.
  signs_.resize(size_t(d));
  uint64_t state = seed, bits = 0;
  for (int i = 0; i < d; ++i) {
    if (i % 64 == 0) bits = splitmix64(state);
    signs_[size_t(i)] = (bits >> (i % 64)) & 1 ? int8_t(-1) : int8_t(1);
  }
}

void RandomizedHadamard::apply(double* row) const {
  const int d = dim();
  for (int i = 0; i < d; ++i) row[i] *= signs_[size_t(i)];
  // Sylvester's Hadamard matrix as log2(d) butterfly stages: (a, b) -> (a + b, a - b).
  for (int len = 1; len < d; len *= 2)
    for (int i = 0; i < d; i += 2 * len)
      for (int j = i; j < i + len; ++j) {
        const double a = row[j], b = row[j + len];
        row[j] = a + b;
        row[j + len] = a - b;
      }
  const double norm = 1.0 / std::sqrt(double(d));
  for (int i = 0; i < d; ++i) row[i] *= norm;
}

void RandomizedHadamard::apply_rows(std::vector<float>& x) const {
  const size_t d = size_t(dim());
  if (x.size() % d != 0)
    throw UsageError(fmt::format("the Hadamard transform: {} values are not rows of head_dim {}", x.size(), d));
  std::vector<double> row(d);
  for (size_t r = 0; r < x.size(); r += d) {
    for (size_t i = 0; i < d; ++i) row[i] = x[r + i];
    apply(row.data());
    for (size_t i = 0; i < d; ++i) x[r + i] = float(row[i]);
  }
}

}  // namespace fa
