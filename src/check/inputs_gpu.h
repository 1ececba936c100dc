// The inputs made on the device, for the cuda back end: the values
// generate_inputs and generate_dout (check/inputs.h) give for the same problem,
// distribution and seed, stored in the problem's dtype, written straight into
// the buffers the kernels read, so a paper point's 100M values are neither
// made on the host nor copied over. The streams are those of input_stream.h,
// computed with the device's log and cos, which may differ from the host
// library's in the last bit of a double; the rounding to bf16 or fp16 absorbs
// that (tests/gpu compare every distribution's tensors bit for bit).
#pragma once
#include <cstdint>

#include "check/inputs.h"
#include "core/types.h"

namespace fa {

// Where the values go: contiguous BSHD buffers in p.dtype (bf16 or fp16),
// Q like generate_inputs' q, K and V likewise; dout null or like O.
struct InputTargets {
  void* q = nullptr;
  void* k = nullptr;
  void* v = nullptr;
  void* dout = nullptr;
};

// KernelError when the device fails (or in a build without CUDA); UsageError
// for an invalid problem or an fp32 one.
void generate_inputs_gpu(const AttnProblem&, Distribution, uint64_t seed, const InputTargets&);

// False in a build without CUDA.
bool inputs_gpu_built();

}  // namespace fa
