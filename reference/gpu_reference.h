// The float64 reference on the GPU: the same O and LSE as reference_forward
// (reference.h), from the tensors a kernel under test reads on the device. Per
// (batch, kv head) K and V become double once; per query head, blocks of rows
// go through S = (scale Q_block) K^T (cuBLAS DGEMM), a float64 masked softmax
// kernel, and O = P V (DGEMM), so S never takes more than `workspace_bytes`
// whatever the seqlen. Conventions are the host reference's: causal bottom-right
// aligned, GQA head h reads kv head h / (heads / heads_kv), a row that sees no
// key has O = 0 and LSE = -inf, a NaN score reaches O and LSE.
//
// reference_forward stays the oracle: tests/gpu and fa-check's reference
// cross-check (check/reference_cross_check.h) hold this one against it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "reference/reference.h"

namespace fa {

// Q, K, V on the device as the kernel under test sees them: contiguous BSHD
// ([batch, seqlen, heads, head_dim]) in the problem's dtype, bf16 or fp16.
struct DeviceInputs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
};

// A bug planted in the GPU reference, so the cross-check against Eigen can be
// shown to catch one (fa-check --self-test, tests/gpu). Never set in a sweep.
enum class GpuReferenceFault {
  none,
  mask_offset,  // causal rows see one key past their last (a wrong diagonal offset)
};

struct GpuReferenceOptions {
  // The most device memory one block's scores S (and P, in place) may take; the
  // row block is workspace_bytes / (8 * keys it sees), at least 1 row.
  int64_t workspace_bytes = int64_t(512) << 20;
  GpuReferenceFault fault = GpuReferenceFault::none;
};

// rows empty = every query row; else sorted, unique, in range (UsageError
// otherwise). KernelError when the device fails, OutOfMemory when its memory does.
ReferenceOutputs reference_forward_gpu(const AttnProblem&, const DeviceInputs&, std::vector<int64_t> rows = {},
                                       const GpuReferenceOptions& = {});

// False in a build without CUDA (reference_forward_gpu then throws KernelError).
bool gpu_reference_built();

}  // namespace fa
