// An e4m3 point's inputs as the sweep makes them: generated in float (the
// distribution's values, not rounded to a 16-bit dtype), Q and K optionally
// rotated by the seeded randomized Hadamard transform, then quantized
// (check/fp8_quant.h). docs/MEASUREMENT.md, "FP8 inputs", states the choices.
#pragma once
#include <cstdint>
#include <vector>

#include "check/fp8_quant.h"
#include "core/tensors.h"
#include "core/types.h"

namespace fa {

// Sequence rows per descale with block scaling: the FP8 kernels' tile height
// (128 query rows, 128 keys per step), so one tile of Q or of K/V needs one
// descale, and a block is long enough that its amax is not one outlier row's.
inline constexpr int64_t kFp8BlockRows = 128;

// A quantized tensor as HostInputs carries it (the strides of its descales).
E4m3Codes e4m3_codes(const Fp8Tensor&);

// How far below e4m3's largest value max |V| * o_scale stays (e4m3_o_scale):
// every O is a convex combination of V's rows, so |O| <= max |V| but for
// rounding P to e4m3, which can push the weights' sum past 1 (2^-4 relative
// for normal values, more where many round up from the subnormals). Half the
// range, as tests/gpu/standalone/cudnn_fp8_check does; it costs only O's
// subnormal floor (2^-10 / o_scale), not its relative precision.
inline constexpr float kE4m3OHeadroom = 2.f;

// The scale a kernel that writes O in e4m3 writes it with (HostInputs::o_scale):
// 448 / (kE4m3OHeadroom * max |V|) over V's dequantized values, so O needs no
// saturation; 1 when V is all zeros.
float e4m3_o_scale(const std::vector<float>& v);

// `in` holds float Q, K, V (as generate_inputs makes them for an e4m3 point).
// Replaces them by their dequantized values and fills in.q8, k8, v8 with what
// the kernels read; returns the inputs as they were, the unquantized ones the
// second error figure is measured against. With hadamard, Q and K are rotated
// by RandomizedHadamard(head_dim, seed) first: scores are unchanged, so the
// unquantized inputs returned are the unrotated ones. UsageError for a
// head_dim the transform cannot take (not a power of two).
HostInputs quantize_inputs(const AttnProblem&, HostInputs& in, const Fp8Settings&, uint64_t seed);

}  // namespace fa
