// The float64 reference on the GPU: the same O and LSE as reference_forward
// (reference.h), from the tensors a kernel under test reads on the device. Per
// (batch, kv head) K and V become double once; per query head, blocks of rows
// go through S = (scale Q_block) K^T (cuBLAS DGEMM), a float64 masked softmax
// kernel, and O = P V (DGEMM), so S never takes more than `workspace_bytes`
// whatever the seqlen. Conventions are the host reference's: causal bottom-right
// aligned, GQA head h reads kv head h / (heads / heads_kv), a row that sees no
// key has O = 0 and LSE = -inf, a NaN score reaches O and LSE.
//
// reference_backward_gpu gives reference_backward's gradients (attention_grad.h)
// the same way, in blocks of consecutive rows: S, P, O = P V, D = rowsum(dO * O),
// dP = dO V^T, dS = P * (dP - D), dQ = scale dS K on the block, and dV += P^T dO,
// dK += scale dS^T Q over the blocks and the kv head's query heads, in float64
// on the device.
//
// reference_forward and reference_backward stay the oracles: tests/gpu and
// fa-check's reference cross-check (check/reference_cross_check.h) hold these
// against them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/types.h"
#include "reference/attention_grad.h"
#include "reference/reference.h"

namespace fa {

// Q, K, V on the device as the kernel under test sees them: contiguous BSHD
// ([batch, seqlen, heads, head_dim]) in the problem's dtype, bf16 or fp16.
// dO likewise, for the gradients (null for a forward).
struct DeviceInputs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* dout = nullptr;
};

// A bug planted in the GPU reference, so the cross-check against Eigen can be
// shown to catch one (fa-check --self-test, tests/gpu). Never set in a sweep.
enum class GpuReferenceFault {
  none,
  mask_offset,  // causal rows see one key past their last (a wrong diagonal offset)
};

struct GpuReferenceOptions {
  // The most device memory one block's scores may take: the forward's S (and P,
  // in place), rows = workspace_bytes / (8 * keys they see); the gradients' S
  // and dP (P and dS in place), rows = workspace_bytes / (16 * keys they see).
  // At least 1 row.
  int64_t workspace_bytes = int64_t(512) << 20;
  GpuReferenceFault fault = GpuReferenceFault::none;
};

// The forward reference left on the device, where the cuda back end compares a
// kernel's outputs with it (check/device_compare.h): at a paper point its O is
// 268 MB of float64, and copying that back to compare on the host took most of
// a point's checking time. Copies share the buffers; the last one frees them.
class DeviceReference {
 public:
  const std::vector<int64_t>& rows() const { return rows_; }  // ascending, as ReferenceOutputs::rows
  const int64_t* rows_on_device() const { return rows_d_.get(); }
  const double* o() const { return o_.get(); }      // [batch, rows, heads, head_dim]
  const double* lse() const { return lse_.get(); }  // [batch, heads, rows]
  // The same values in host memory (reference_forward_gpu's result).
  ReferenceOutputs to_host(const AttnProblem&) const;

 private:
  friend struct DeviceReferenceAccess;  // gpu_forward.cu fills it
  std::vector<int64_t> rows_;
  std::shared_ptr<int64_t> rows_d_;
  std::shared_ptr<double> o_, lse_;
};

// rows empty = every query row; else sorted, unique, in range (UsageError
// otherwise). KernelError when the device fails, OutOfMemory when its memory does.
DeviceReference reference_forward_gpu_on_device(const AttnProblem&, const DeviceInputs&,
                                                std::vector<int64_t> rows = {}, const GpuReferenceOptions& = {});
// The same, copied to the host.
ReferenceOutputs reference_forward_gpu(const AttnProblem&, const DeviceInputs&, std::vector<int64_t> rows = {},
                                       const GpuReferenceOptions& = {});

// The reference gradients left on the device, where the cuda back end compares
// a backward kernel's dQ, dK, dV with them (check/device_compare.h), for the
// reason DeviceReference stays there. Copies share the buffers.
class DeviceGrads {
 public:
  const std::vector<int64_t>& rows() const { return rows_; }  // ascending, as SampledGrads::rows
  const std::vector<int64_t>& cols() const { return cols_; }  // ascending, as SampledGrads::cols
  const int64_t* rows_on_device() const { return rows_d_.get(); }
  const int64_t* cols_on_device() const { return cols_d_.get(); }
  const double* dq() const { return dq_.get(); }  // [batch, rows, heads, head_dim]
  const double* dk() const { return dk_.get(); }  // [batch, cols, heads_kv, head_dim]
  const double* dv() const { return dv_.get(); }  // like dk
  // The same values in host memory (reference_backward_gpu's result).
  SampledGrads to_host(const AttnProblem&) const;

 private:
  friend struct DeviceGradsAccess;  // gpu_grad.cu fills it
  std::vector<int64_t> rows_, cols_;
  std::shared_ptr<int64_t> rows_d_, cols_d_;
  std::shared_ptr<double> dq_, dk_, dv_;
};

// dQ on `rows`, dK and dV on `cols` (each empty = every one; else sorted,
// unique, in range), in reference_backward's layout; `in` must hold dO. Every
// row's block is computed whatever `rows` and `cols` are (a column's gradient
// sums over the rows that see it). Errors as reference_forward_gpu's.
DeviceGrads reference_backward_gpu_on_device(const AttnProblem&, const DeviceInputs&, std::vector<int64_t> rows = {},
                                             std::vector<int64_t> cols = {}, const GpuReferenceOptions& = {});
// The same, copied to the host.
SampledGrads reference_backward_gpu(const AttnProblem&, const DeviceInputs&, std::vector<int64_t> rows = {},
                                    std::vector<int64_t> cols = {}, const GpuReferenceOptions& = {});

// False in a build without CUDA (reference_forward_gpu and reference_backward_gpu
// then throw KernelError).
bool gpu_reference_built();

}  // namespace fa
