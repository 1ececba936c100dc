// The gradient tolerance rule's standard backward in the dtype
// (check/standard_bwd.h, standard_backward_in_precision) on the GPU, for the
// cuda back end's every-row-and-column check: the same definitions on the
// device tensors, every intermediate stored (rounded to the dtype) at the same
// places, D from the stored P and dP, per-query-head dK_h and dV_h stored and
// summed over the GQA group in float32, then stored. cuBLAS SGEMMs (float32
// accumulation) in blocks of rows, so the summation order is not Eigen's and
// the figures can differ from the host standard's in the last digits of a
// rounding decision.
#pragma once

#include "check/grad_metrics.h"
#include "core/tensors.h"
#include "core/types.h"
#include "reference/gpu_reference.h"

namespace fa {

// The standard's dQ, dK, dV on every row and column (whole tensors, the dtype's
// values in float32); `in` must hold dO. KernelError when the device fails,
// OutOfMemory when its memory does; KernelError in a build without CUDA.
HostGrads standard_backward_gpu(const AttnProblem&, const DeviceInputs&);

// The standard's figures against the reference gradients on the reference's
// rows and columns, computed on the device (check/device_compare.h): what
// set_grad_tolerances takes, without either side leaving the device.
GradComparison standard_grad_errors_gpu(const AttnProblem&, const DeviceInputs&, const DeviceGrads&);

}  // namespace fa
