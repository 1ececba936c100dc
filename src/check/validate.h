// How a kernel is judged, in one place for the sweep runner (and so fa-check)
// and fa-gbench: the reference and tolerances of a point, then per kernel
// poison -> run once -> fetch -> compare -> verdict. A kernel is timed only after
// it passes here, on the same inputs.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"
#include "core/run_context.h"
#include "core/tensors.h"
#include "core/tolerances.h"
#include "measure/executor.h"
#include "reference/reference.h"
#include "registry/kernel.h"

namespace fa {

// What every kernel of one point is judged against.
struct PointCheck {
  ReferenceOutputs ref;
  Tolerances tolerances;
};

// The reference on every query row up to max_check_rows of seqlen_q, beyond that on
// a seeded sample that holds the boundary rows of block_m-sized blocks (128 when
// block_m is 0), and the point's tolerances.
PointCheck check_point(const AttnProblem&, const HostInputs&, int64_t max_check_rows, int block_m,
                       uint64_t seed, int threads);

struct Validation {
  ErrorMetrics errors;
  bool passed = false;
  std::string why;              // when !passed: the errors against the tolerances, and the seed
  RunContext counted;           // what the run reported (the CPU kernels' byte counts)
  int64_t peak_extra_bytes = -1;
};

// Runs v once on the tensors `ex` holds for p (its workspace already reserved),
// with O and LSE poisoned first so unwritten elements show; `outputs`, when set,
// sees what was fetched. Throws what the run throws (KernelError, OutOfMemory).
Validation validate_variant(const KernelVariant& v, const AttnProblem& p, Executor& ex, const PointCheck& check,
                            uint64_t seed, const std::function<void(const HostOutputs&)>& outputs = {});

}  // namespace fa
