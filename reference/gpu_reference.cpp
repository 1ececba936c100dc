// The host side of the GPU reference: the problem and rows checked as the host
// reference checks them, and each row's visible keys from AttnProblem::keys_seen
// (the one definition of the causal mask), before the device pass.
#include "reference/gpu_reference.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/errors.h"
#include "reference/dense.h"
#include "reference/gpu_forward.h"

namespace fa {

ReferenceOutputs reference_forward_gpu(const AttnProblem& p, const DeviceInputs& in, std::vector<int64_t> rows,
                                       const GpuReferenceOptions& opt) {
  if (auto why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("reference_forward_gpu: {}", why));
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    throw UsageError(fmt::format("reference_forward_gpu: {}: the device holds bf16 or fp16 tensors", p.describe()));
  if (!in.q || !in.k || !in.v) throw UsageError("reference_forward_gpu: Q, K and V must be on the device");
  if (opt.workspace_bytes <= 0) throw UsageError("reference_forward_gpu: the workspace must be positive");

  ReferenceOutputs out;
  out.rows = ref::checked_indices(std::move(rows), p.seqlen_q, "reference_forward_gpu: row");
  const int64_t n_rows = int64_t(out.rows.size());
  out.o.assign(size_t(p.batch) * n_rows * p.heads * p.head_dim, 0.0);
  out.lse.assign(size_t(p.batch) * p.heads * n_rows, 0.0);

  const bool planted = opt.fault == GpuReferenceFault::mask_offset && p.causal;
  std::vector<int64_t> seen(static_cast<size_t>(n_rows));
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t r = out.rows[size_t(i)];
    // planted: the diagonal one key to the right of where keys_seen puts it
    seen[size_t(i)] = planted ? std::clamp<int64_t>(r + p.seqlen_k - p.seqlen_q + 2, 0, p.seqlen_k) : p.keys_seen(r);
  }
  gpurows::forward_f64(p, in, seen, opt.workspace_bytes, out);
  return out;
}

}  // namespace fa
