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

// dQ on `rows`, dK and dV on `cols` (checked: sorted, unique, in range) in
// device buffers; seen[r] is how many keys query row r sees, for every row
// (ascending).
DeviceGrads backward_f64(const AttnProblem&, const DeviceInputs&, std::vector<int64_t> rows,
                         std::vector<int64_t> cols, const std::vector<int64_t>& seen, int64_t workspace_bytes);

}  // namespace fa::gpurows
