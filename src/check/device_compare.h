// The error figures of outputs held on the device against the float64
// reference held there (reference/gpu_reference.h), computed on the device:
// the same numbers compare_outputs (check/metrics.h) gives after fetching both,
// without moving a paper point's 268 MB of float64 reference and 67 MB of O to
// the host and walking them on one core for every kernel. The partial sums are
// added in a fixed order, so the figures do not change from run to run.
#pragma once
#include <cstdint>

#include "core/result.h"
#include "core/types.h"
#include "reference/gpu_reference.h"

namespace fa {

// Outputs on the device: O [batch, rows, heads, head_dim] in `dtype` (bf16,
// fp16 or fp32), LSE float32 [batch, heads, rows]. row_of: for each of the
// reference's rows its row in these outputs (device memory); null when the
// outputs hold exactly the reference's rows, in its order.
struct DeviceOutputs {
  const void* o = nullptr;
  const float* lse = nullptr;
  DType dtype = DType::bf16;
  int64_t rows = 0;
  const int64_t* row_of = nullptr;
};

// compare_outputs' figures: O's max abs and relative error and relative L2
// over the reference's rows, LSE's over the rows that see a key (a row that
// sees none must hold -inf), non-finite values counted apart, a non-finite
// reference value making the maxima NaN. KernelError when the device fails;
// in a build without CUDA too.
ErrorMetrics compare_outputs_gpu(const AttnProblem&, const DeviceOutputs&, const DeviceReference&);

}  // namespace fa
