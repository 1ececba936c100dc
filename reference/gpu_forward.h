// The device side of reference_forward_gpu (gpu_reference.h), after the host
// side has checked the problem and the rows: CUDA in gpu_forward.cu, a stand-in
// that refuses in gpu_forward.nocuda.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "reference/gpu_reference.h"
#include "reference/reference.h"

namespace fa::gpurows {

// The reference on `rows` (checked: sorted, unique, in range) in device
// buffers; seen[i] is how many keys rows[i] sees (ascending with the rows).
DeviceReference forward_f64(const AttnProblem&, const DeviceInputs&, std::vector<int64_t> rows,
                            const std::vector<int64_t>& seen, int64_t workspace_bytes);

}  // namespace fa::gpurows
