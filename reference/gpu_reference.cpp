// The host side of the GPU reference: the problem, rows and columns checked as
// the host reference checks them, and each row's visible keys from
// AttnProblem::keys_seen (the one definition of the causal mask), before the
// device pass.
#include "reference/gpu_reference.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "core/errors.h"
#include "reference/dense.h"
#include "reference/gpu_forward.h"
#include "reference/gpu_grad.h"

namespace fa {
namespace {

void check_request(const AttnProblem& p, const DeviceInputs& in, const GpuReferenceOptions& opt, const char* who) {
  if (auto why = p.invalid_reason(); !why.empty()) throw UsageError(fmt::format("{}: {}", who, why));
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    throw UsageError(fmt::format("{}: {}: the device holds bf16 or fp16 tensors", who, p.describe()));
  if (!in.q || !in.k || !in.v) throw UsageError(fmt::format("{}: Q, K and V must be on the device", who));
  if (opt.workspace_bytes <= 0) throw UsageError(fmt::format("{}: the workspace must be positive", who));
}

// How many keys each of `rows` sees: keys_seen, or with the planted fault the
// diagonal one key to the right of where keys_seen puts it.
std::vector<int64_t> keys_seen_by(const AttnProblem& p, const std::vector<int64_t>& rows, GpuReferenceFault fault) {
  const bool planted = fault == GpuReferenceFault::mask_offset && p.causal;
  std::vector<int64_t> seen(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    seen[i] = planted ? std::clamp<int64_t>(rows[i] + p.seqlen_k - p.seqlen_q + 2, 0, p.seqlen_k) : p.keys_seen(rows[i]);
  return seen;
}

}  // namespace

DeviceReference reference_forward_gpu_on_device(const AttnProblem& p, const DeviceInputs& in,
                                                std::vector<int64_t> rows, const GpuReferenceOptions& opt) {
  check_request(p, in, opt, "reference_forward_gpu");
  rows = ref::checked_indices(std::move(rows), p.seqlen_q, "reference_forward_gpu: row");
  const std::vector<int64_t> seen = keys_seen_by(p, rows, opt.fault);
  return gpurows::forward_f64(p, in, std::move(rows), seen, opt.workspace_bytes);
}

ReferenceOutputs reference_forward_gpu(const AttnProblem& p, const DeviceInputs& in, std::vector<int64_t> rows,
                                       const GpuReferenceOptions& opt) {
  return reference_forward_gpu_on_device(p, in, std::move(rows), opt).to_host(p);
}

DeviceGrads reference_backward_gpu_on_device(const AttnProblem& p, const DeviceInputs& in, std::vector<int64_t> rows,
                                             std::vector<int64_t> cols, const GpuReferenceOptions& opt) {
  check_request(p, in, opt, "reference_backward_gpu");
  if (!in.dout) throw UsageError("reference_backward_gpu: dO must be on the device");
  rows = ref::checked_indices(std::move(rows), p.seqlen_q, "reference_backward_gpu: row");
  cols = ref::checked_indices(std::move(cols), p.seqlen_k, "reference_backward_gpu: column");
  std::vector<int64_t> every_row(size_t(p.seqlen_q));
  std::iota(every_row.begin(), every_row.end(), int64_t(0));
  return gpurows::backward_f64(p, in, std::move(rows), std::move(cols), keys_seen_by(p, every_row, opt.fault),
                               opt.workspace_bytes);
}

SampledGrads reference_backward_gpu(const AttnProblem& p, const DeviceInputs& in, std::vector<int64_t> rows,
                                    std::vector<int64_t> cols, const GpuReferenceOptions& opt) {
  return reference_backward_gpu_on_device(p, in, std::move(rows), std::move(cols), opt).to_host(p);
}

}  // namespace fa
