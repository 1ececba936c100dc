// fa-check on the cuda back end: before any kernel is judged, the GPU float64
// reference is held against the Eigen one on every suite case the device can
// hold (bf16, fp16) and distribution, on sampled rows, and its gradients on the
// cases with a backward, on sampled rows and columns (check/reference_cross_check.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cli/fa_check/suite.h"
#include "measure/executor.h"
#include "reference/gpu_reference.h"

namespace fa::check {

struct ReferenceCheckOutcome {
  size_t runs = 0;    // cases x distributions compared
  size_t failed = 0;  // of them, outside reference_agreement
  size_t grad_runs = 0;    // of them, with a backward: the gradients compared too
  size_t grad_failed = 0;  // of those, gradients outside gradient_agreement
};

// Prints one line per failing run and two summary lines, O and LSE then the
// gradients (`label` names the
// reference: "GPU reference" or the planted fault). Uses `ex`'s buffers.
ReferenceCheckOutcome check_gpu_reference(const std::vector<CheckCase>&, uint64_t seed, Executor& ex,
                                          GpuReferenceFault fault, const char* label);

}  // namespace fa::check
