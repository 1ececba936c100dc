// The seeded streams the inputs are drawn from, shared by the host generator
// (inputs.cpp) and the device one (inputs_gpu.cu), which give the same values:
// each tensor in chunks of kInputChunk values, chunk c of tensor t drawn from
// std::mt19937_64 seeded with mix(seed, t, c), one value after another; a
// normal value takes two draws (Box-Muller), a uniform one one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/types.h"

// mix runs on the device too (inputs_gpu.cu seeds each chunk there).
#if defined(__CUDACC__)
#define FA_INPUT_STREAM_HD __host__ __device__
#else
#define FA_INPUT_STREAM_HD
#endif

namespace fa::input_stream {

constexpr size_t kInputChunk = size_t(1) << 16;

enum Tensor : uint64_t { kQ = 1, kK = 2, kV = 3, kDirection = 4, kDout = 5, kOutlierChannels = 6 };

// splitmix64 over the triple.
FA_INPUT_STREAM_HD inline uint64_t mix(uint64_t seed, uint64_t tensor, uint64_t chunk) {
  uint64_t z = seed ^ (tensor * 0x9E3779B97F4A7C15ull) ^ (chunk * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Adversarial scores (inputs.cpp says how they stress a kernel): every query
// and key carries a * u, u a unit direction drawn from the seed.
struct AdversarialDirection {
  double a = 0;
  std::vector<double> u;  // head_dim values
};
AdversarialDirection adversarial_direction(const AttnProblem&, uint64_t seed);

// Outlier channels: a gain per channel of Q and K, kOutlierScale on head_dim / 64
// of them (at least one) drawn from the seed, 1 elsewhere.
std::vector<double> outlier_gains(const AttnProblem&, uint64_t seed);

}  // namespace fa::input_stream
