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

// Fills out.o and out.lse, already sized for out.rows; seen[i] is how many keys
// out.rows[i] sees (ascending with the rows), n_vis the most of them.
void forward_f64(const AttnProblem&, const DeviceInputs&, const std::vector<int64_t>& seen, int64_t workspace_bytes,
                 ReferenceOutputs& out);

}  // namespace fa::gpurows
