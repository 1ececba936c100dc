// The error figures of outputs held on the device against the float64
// reference held there (reference/gpu_reference.h), computed on the device:
// the same numbers compare_outputs (check/metrics.h) gives after fetching both,
// without moving a paper point's 268 MB of float64 reference and 67 MB of O to
// the host and walking them on one core for every kernel. The partial sums are
// added in a fixed order, so the figures do not change from run to run.
#pragma once
#include <cstdint>

#include <cstddef>
#include <memory>

#include "check/grad_metrics.h"
#include "core/result.h"
#include "core/types.h"
#include "reference/gpu_reference.h"

namespace fa {

// Outputs on the device: O [batch, rows, heads, head_dim] in `dtype` (bf16,
// fp16 or fp32), LSE float32 [batch, heads, rows]. row_of: for each of the
// reference's rows its row in these outputs (device memory); null when the
// outputs hold exactly the reference's rows, in its order.
struct DeviceOutputs {
  const void* o = nullptr;
  const float* lse = nullptr;
  DType dtype = DType::bf16;
  int64_t rows = 0;
  const int64_t* row_of = nullptr;
};

// compare_outputs' figures: O's max abs and relative error and relative L2
// over the reference's rows, LSE's over the rows that see a key (a row that
// sees none must hold -inf), non-finite values counted apart, a non-finite
// reference value making the maxima NaN. KernelError when the device fails;
// in a build without CUDA too.
ErrorMetrics compare_outputs_gpu(const AttnProblem&, const DeviceOutputs&, const DeviceReference&);

// A backward's gradients on the device, whole tensors in `dtype` (bf16, fp16
// or fp32): dQ like Q [batch, seqlen_q, heads, head_dim], dK and dV like K
// [batch, seqlen_k, heads_kv, head_dim].
struct DeviceGradOutputs {
  const void* dq = nullptr;
  const void* dk = nullptr;
  const void* dv = nullptr;
  DType dtype = DType::bf16;
};

// compare_grads' figures (check/grad_metrics.h): dQ on the reference's rows,
// dK and dV on its columns, every batch and head; non-finite values counted
// apart, a non-finite reference value making the maxima NaN; rows_checked,
// cols_checked and sampled as compare_grads sets them; the tolerances left 0.
// With each tensor's largest |reference value|, which the tolerance rule's
// floors take. KernelError when the device fails; in a build without CUDA too.
GradComparison compare_grads_gpu(const AttnProblem&, const DeviceGradOutputs&, const DeviceGrads&);

// A copy of `bytes` of device memory taken now, to tell later whether a kernel
// changed them: a backward must leave O and LSE, its inputs, bit for bit as
// its forward partner wrote them. Compared on the device, so neither copy
// travels to the host. KernelError / OutOfMemory as the device fails.
class DeviceSnapshot {
 public:
  DeviceSnapshot(const void* at, size_t bytes);
  // Whether the `bytes` at `at` (the snapshot's size) hold the snapshot's bits.
  bool same_bits(const void* at) const;

 private:
  std::shared_ptr<void> copy_;
  size_t bytes_ = 0;
};

}  // namespace fa
