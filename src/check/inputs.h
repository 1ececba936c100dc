// Seeded input generation. Values are rounded to the problem's dtype on the host
// so the reference and every back end see exactly the same numbers.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/distribution.h"
#include "core/tensors.h"
#include "core/types.h"

namespace fa {

// What generate_inputs draws for each Distribution (core/distribution.h):
// normal: N(0,1). uniform: U(-1,1). adversarial: large-magnitude scores whose
// row maximum arrives late in the row (stresses the online-softmax rescale and
// overflows a softmax that does not subtract the running max). outliers: N(0,1)
// with a few channels of Q and K 30x larger, the same channels in every row, as
// activations have them (what FP8 quantization and incoherent processing face).

HostInputs generate_inputs(const AttnProblem&, Distribution, uint64_t seed);
// dO for the backward pass, shaped like O, from the same seed: its own stream,
// so Q, K, V of a seed are those generate_inputs gives. normal: N(0,1);
// uniform: U(-1,1); adversarial, outliers: N(0,1) (the hard part is in Q and K).
std::vector<float> generate_dout(const AttnProblem&, Distribution, uint64_t seed);
void round_to_dtype(std::vector<float>&, DType);  // fp32: no-op

}  // namespace fa
