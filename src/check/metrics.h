// Error metrics of a kernel's outputs against the reference, and the tolerance
// rule (docs/MEASUREMENT.md states it with the floors).
#pragma once
#include "check/error_accumulator.h"
#include "check/standard_gpu.h"
#include "core/tensors.h"
#include "core/result.h"
#include "core/tolerances.h"
#include "reference/reference.h"

namespace fa {

// Compares only the rows in ref.rows. Relative error is |o-r| / (|r| + rel_eps).
ErrorMetrics compare_outputs(const AttnProblem&, const HostOutputs&, const ReferenceOutputs&);

// The FlashAttention project's rule: allowed O max abs error = 2 x the max abs
// error of a standard implementation in the kernel's own precision (float32
// accumulation, S and P stored in the dtype, O rounded to the dtype),
// measured on the same rows, plus a per-dtype floor. e4m3: the FP8 standard
// (scores added up as the FP8 tensor cores do, check/fp8_mma.h; exp(s - m)
// rounded to e4m3, O rounded to output_dtype; docs/MEASUREMENT.md, "The FP8
// tolerance rule"), the form of a kernel that writes O in bf16.
double o_tolerance(const AttnProblem&, const HostInputs&, const ReferenceOutputs&);
double dtype_floor(DType);
// The point's tolerances: O as o_tolerance, LSE 1e-3 + 2 x the same standard
// implementation's LSE max abs error, with one pass of that standard.
// e4m3_o (e4m3 points with HostInputs::o_scale): also the tolerances of a
// kernel that rounds the normalized P and writes O in e4m3 (cuDNN's FP8
// forward), from the same pass: O 2 x that form of the standard's error +
// e4m3_o_floor, LSE as for the point.
Tolerances tolerances_for(const AttnProblem&, const HostInputs&, const ReferenceOutputs&,
                          Tolerances* e4m3_o = nullptr);
// The same rule from the standard's outputs computed elsewhere (on the GPU,
// check/standard_gpu.h) on the reference's rows.
Tolerances tolerances_for(const AttnProblem&, const StandardRows&, const ReferenceOutputs&);
// The same rule from the standard's error figures measured on the device
// (standard_errors_gpu). A non-finite value in the standard's outputs makes
// the tolerance NaN, which no kernel passes: a broken standard proves nothing.
Tolerances tolerances_for(const AttnProblem&, const ErrorMetrics& standard);
// The floor of an O written in e4m3 with scale o_scale (docs/MEASUREMENT.md,
// "An e4m3 O"): the most that rounding O alone may cost, 2^-4 (e4m3's relative
// half ulp) of the largest |reference O| plus 2^-10 / o_scale (half the
// subnormal spacing, 2^-9, in O's units).
double e4m3_o_floor(double ref_o_max, float o_scale);
// Finite everywhere, O max abs error <= tolerance, LSE's <= lse_tolerance (1e-3 when unset).
bool passes(const ErrorMetrics&, const Tolerances&);

}  // namespace fa
