// The tolerance rule's standard implementation in the kernel's precision
// (metrics.cpp, standard_in_precision) on the GPU, for the cuda back end's
// every-row check: the same steps on the device tensors, S and O from cuBLAS
// SGEMMs (float32 accumulation, another summation order than Eigen's),
// S * scale rounded to the dtype, a float32 softmax, P rounded to the dtype,
// O rounded to the dtype.
#pragma once
#include <cstdint>
#include <vector>

#include "core/result.h"
#include "core/types.h"
#include "reference/gpu_reference.h"

namespace fa {

// The standard's O (rounded to the dtype) and LSE on the rows given.
struct StandardRows {
  std::vector<int64_t> rows;  // ascending, as the reference's
  std::vector<float> o;       // [batch, rows.size(), heads, head_dim]
  std::vector<float> lse;     // [batch, heads, rows.size()], -inf for a row that sees no key
};

// rows: sorted, unique, in range (the reference's rows). KernelError when the
// device fails, OutOfMemory when its memory does; KernelError in a build without CUDA.
StandardRows standard_forward_gpu(const AttnProblem&, const DeviceInputs&, const std::vector<int64_t>& rows);

// The standard's error figures against the reference on the reference's rows,
// computed on the device (check/device_compare.h): what the tolerance rule
// takes from it without either leaving the device.
ErrorMetrics standard_errors_gpu(const AttnProblem&, const DeviceInputs&, const DeviceReference&);

}  // namespace fa
