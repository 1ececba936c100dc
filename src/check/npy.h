// Minimal .npy reader/writer (format 1.0/2.0, little-endian, C order) for
// float32 and float16 arrays, so users can feed their own tensors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fa {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to float32
};

NpyArray load_npy(const std::string& path);  // throws UsageError with the path and why
// Writes float32 (or float16 when as_f16) atomically (temp file + rename).
void save_npy(const std::string& path, const std::vector<int64_t>& shape,
              const std::vector<float>& data, bool as_f16 = false);

}  // namespace fa
