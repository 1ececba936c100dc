// How a kernel is judged, in one place for the sweep runner (and so fa-check)
// and fa-gbench: the reference and tolerances of a point, then per kernel
// poison -> run once -> fetch -> compare -> verdict. A kernel is timed only after
// it passes here, on the same inputs. A backward kernel is judged after its
// forward partner: the partner's O and LSE as a forward is, then dQ, dK, dV.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/standard_bwd.h"
#include "core/grad_errors.h"
#include "core/result.h"
#include "core/run_context.h"
#include "core/tensors.h"
#include "core/tolerances.h"
#include "measure/executor.h"
#include "reference/attention_grad.h"
#include "reference/gpu_reference.h"
#include "reference/reference.h"
#include "registry/kernel.h"

namespace fa {

// What every kernel of one point is judged against.
struct PointCheck {
  // O and LSE on the checked rows; rows only when device_ref holds them.
  ReferenceOutputs ref;
  // The cuda back end: the reference stays on the device and kernels' outputs
  // are compared there (check/device_compare.h).
  std::optional<DeviceReference> device_ref;
  Tolerances tolerances;
  // A point with a backward row: dQ on ref.rows, dK and dV on the checked
  // columns, on the host (grads) or, on the cuda back end, on the device
  // (device_grads, compared there); one of the two.
  std::optional<SampledGrads> grads;
  std::optional<DeviceGrads> device_grads;
  // e4m3: the reference on the unquantized inputs, on ref.rows (the second
  // error figure, Validation::errors_vs_unquantized).
  std::optional<ReferenceOutputs> unquantized_ref;
  // e4m3: the tolerances of a kernel that writes O in e4m3 (tolerances_for's
  // e4m3_o: the standard's normalized-P, e4m3-O form, and O's rounding floor).
  std::optional<Tolerances> e4m3_o_tolerances;
};

// The reference on every query row up to max_check_rows of seqlen_q, beyond that on
// a seeded sample that holds the boundary rows of block_m-sized blocks (128 when
// block_m is 0), and the point's tolerances. With grad_block_n (the inputs carry
// dO), also the reference gradients, dK and dV on every key column up to
// max_check_rows of seqlen_k, beyond that on a seeded sample around block_n-sized
// blocks (128 when 0): one float64 pass gives the forward and the gradients.
//
// With `device` (the cuda back end: the tensors the kernels read, dO too for
// gradients), the references are the GPU ones (reference/gpu_reference.h) and
// stay on the device (device_ref, device_grads), the forward tolerance rule's
// standard runs there too (check/standard_gpu.h) and so does the gradient
// rule's (check/standard_bwd_gpu.h, through GradTolerances): every row and
// column costs little, nothing of it leaves the device, and `inputs` may be empty.
//
// An e4m3 point is checked on the host (`device` must be null): `inputs` hold
// the dequantized values the kernels see, and `unquantized` (required) the
// values before quantization, whose reference on the same rows is kept too.
PointCheck check_point(const AttnProblem&, const HostInputs&, int64_t max_check_rows, int block_m,
                       uint64_t seed, int threads, std::optional<int> grad_block_n = std::nullopt,
                       const DeviceInputs* device = nullptr, const HostInputs* unquantized = nullptr);

// A point's gradient tolerances, computed once and shared by every backward row of
// the point: the standard they derive from forms D from its own stored P and dP,
// so they do not depend on which forward partner produced O (docs/MEASUREMENT.md).
class GradTolerances {
 public:
  // The standard on the host, on the reference's rows and columns.
  void set(GradErrors&, const AttnProblem&, const HostInputs&, const SampledGrads& ref, int threads);
  // The standard on the device (the cuda back end), compared there.
  void set(GradErrors&, const AttnProblem&, const DeviceInputs&, const DeviceGrads& ref);

 private:
  void copy_to(GradErrors&) const;
  std::optional<GradErrors> computed_;
};

// What judging a backward variant needs beyond what a forward's does.
struct BackwardCheck {
  const KernelVariant* partner = nullptr;  // the forward that gives it O and LSE
  const HostInputs* inputs = nullptr;      // the point's inputs, dO included (with PointCheck::grads)
  GradTolerances* tolerances = nullptr;    // the point's
  int threads = 0;
  const DeviceInputs* device = nullptr;    // the tensors on the device (with PointCheck::device_grads)
};

struct Validation {
  ErrorMetrics errors;  // O and LSE; for a backward, its forward partner's
  // What `errors` were held to: the point's tolerances, or for a kernel that
  // writes O in e4m3 its own (PointCheck::e4m3_o_tolerances).
  Tolerances tolerances;
  std::optional<ErrorMetrics> errors_vs_unquantized;  // e4m3: against PointCheck::unquantized_ref
  std::optional<GradErrors> grad_errors;  // a backward's dQ, dK, dV (when its partner passed)
  bool passed = false;
  std::string why;              // when !passed: the errors against the tolerances, and the seed
  RunContext counted;           // what the run reported (the CPU kernels' byte counts)
  int64_t peak_extra_bytes = -1;
  // A backward: its forward partner's run.
  RunContext partner_counted;
  int64_t partner_peak_extra_bytes = -1;
};

// Runs v once on the tensors `ex` holds for p (after telling `ex` what v writes
// O in, Executor::set_o_dtype), with its outputs poisoned first
// so unwritten elements show; `outputs`, when set, sees what a forward fetched.
// A forward's workspace is already reserved. A backward (`bwd` required) runs
// its partner on poisoned O and LSE (reserving each one's workspace), fails as
// "forward partner X failed" if that fails the forward rule, then runs on
// poisoned dQ, dK, dV; it fails if it changed O or LSE (its inputs: compared
// bit for bit with what the partner left, on the device with device_grads) or
// breaks the gradient rule. Throws what a run throws (KernelError, OutOfMemory).
Validation validate_variant(const KernelVariant& v, const AttnProblem& p, Executor& ex, const PointCheck& check,
                            uint64_t seed, const std::function<void(const HostOutputs&)>& outputs = {},
                            const BackwardCheck* bwd = nullptr);

}  // namespace fa
