// Errors of a backward pass's dQ, dK, dV against the float64 reference, and the
// gradient tolerance rule (docs/MEASUREMENT.md, "The gradient tolerance rule").
#pragma once
#include <vector>

#include "check/standard_bwd.h"
#include "core/tensors.h"
#include "core/grad_errors.h"
#include "core/types.h"
#include "reference/attention_grad.h"

namespace fa {

// Compares dQ on ref.rows and dK, dV on ref.cols (every element of those rows
// and columns, all batches and heads). Relative error: |x - r| / (|r| + 1e-3).
// Leaves the tolerances 0: set_grad_tolerances sets them.
GradErrors compare_grads(const AttnProblem&, const HostGrads&, const SampledGrads& ref);

// A comparison's figures and what the tolerance rule scales its floors by: the
// largest |reference value| among the compared elements of each tensor (NaN when
// one is NaN). compare_grads_gpu (check/device_compare.h) gives it on the device.
struct GradComparison {
  GradErrors errors;
  double dq_ref_max_abs = 0, dk_ref_max_abs = 0, dv_ref_max_abs = 0;
};

// The FlashAttention tests' rule per tensor X in dQ, dK, dV:
//   tolerance_X = 2 * E_X + grad_floor_factor(dtype) * max|ref_X|
//                 + grad_floor_factor(fp32) * max(max|ref_dQ|, max|ref_dK|, max|ref_dV|),
// E_X the max abs error of standard_backward_in_precision (check/standard_bwd.h)
// on the same rows and columns; `stats`, when given, are its statistics of this
// problem and inputs. (The standard forms D from its stored P and dP: the rule does
// not depend on which forward produced the O a kernel is given, and takes none.)
void set_grad_tolerances(GradErrors&, const AttnProblem&, const HostInputs&, const SampledGrads& ref, int threads = 0,
                         const StandardStats* stats = nullptr);
// The same rule from the standard's comparison with the reference, measured
// elsewhere (on the device: standard_grad_errors_gpu, check/standard_bwd_gpu.h).
// Both forms: where the standard's gradient X holds a NaN/Inf, tolerance_X is NaN,
// which no kernel passes (a broken standard proves nothing, as in the forward).
void set_grad_tolerances(GradErrors&, DType, const GradComparison& standard);
// One ulp of the dtype at the largest checked value (2^-7 bf16, 2^-10 fp16);
// fp32: 2^-17, float32 rounding's random walk over 16384 terms (sqrt(n) * 2^-24).
double grad_floor_factor(DType);

}  // namespace fa
