// The randomized Hadamard transform of incoherent processing:
//   H = (1/sqrt(d)) * Hadamard_d * diag(s),  s in {-1, +1}^d drawn from a seed.
// H is orthogonal, so rotating every Q and K row over head_dim (q -> H q)
// leaves each score q.k unchanged, while it spreads a few large channels over
// all d of them: each group's amax falls toward its RMS and e4m3 quantization
// loses less (docs/MEASUREMENT.md, "FP8 inputs").
#pragma once
#include <cstdint>
#include <vector>

namespace fa {

class RandomizedHadamard {
 public:
  // d must be a power of two (head dims 64, 128, 256); others are a UsageError.
  RandomizedHadamard(int d, uint64_t seed);
  int dim() const { return int(signs_.size()); }
  const std::vector<int8_t>& signs() const { return signs_; }
  // row[0..d) := H row, in place; O(d log d) (fast Walsh-Hadamard transform).
  void apply(double* row) const;
  // Every d-long row of x (a BSHD tensor with head_dim = d), computed in double
  // and rounded to float once. Throws UsageError if x.size() is not a multiple of d.
  void apply_rows(std::vector<float>& x) const;

 private:
  std::vector<int8_t> signs_;
};

}  // namespace fa
