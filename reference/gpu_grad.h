// The device side of reference_backward_gpu (gpu_reference.h), after the host
// side has checked the problem, the rows and the columns: CUDA in gpu_grad.cu,
// a stand-in that refuses in gpu_grad.nocuda.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "reference/attention_grad.h"
#include "reference/gpu_reference.h"

namespace fa::gpurows {

// Fills out.dq, out.dk and out.dv, already sized for out.rows and out.cols;
// seen[r] is how many keys query row r sees, for every row (ascending).
void backward_f64(const AttnProblem&, const DeviceInputs&, const std::vector<int64_t>& seen, int64_t workspace_bytes,
                  SampledGrads& out);

}  // namespace fa::gpurows
