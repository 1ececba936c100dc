// cuDNN's FP8 (e4m3) attention forward, run in-process: per-tensor descales
// in, O (bf16 or e4m3), the log-sum-exp and the two amax values out. A peer
// for measurement and checks, not a registry family (AttnParams has no FP8
// fields). Host-compiled declarations: no cuDNN or CUDA headers.
#pragma once
#include <cstdint>

namespace fa::cudnn_sdpa_fp8 {

enum class OType { bf16, e4m3 };

struct Fp8Params {
  // e4m3 codes, BSHD: Q [batch, seqlen_q, heads, head_dim], K and V
  // [batch, seqlen_k, heads_kv, head_dim] (GQA/MQA when heads_kv < heads).
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void* o = nullptr;      // BSHD like Q, o_type
  float* lse = nullptr;   // [batch, heads, seqlen_q], natural log
  // One float each in device memory. A tensor's value is its code's value
  // times its descale. P is rounded to e4m3 as P * scale_s and descaled by
  // descale_s. scale_o multiplies an e4m3 O (unused for bf16 O).
  const float *descale_q = nullptr, *descale_k = nullptr, *descale_v = nullptr;
  const float *descale_s = nullptr, *scale_s = nullptr, *scale_o = nullptr;
  // Outputs: max |P| and max |O| before scale_o. Zero them before a launch:
  // the kernel may fold its maxima into the values there.
  float *amax_s = nullptr, *amax_o = nullptr;
  int batch = 0, heads = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0;
  // Element strides; head_dim is contiguous.
  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  float softmax_scale = 0.f;  // applied to the descaled scores
  bool causal = false;        // bottom-right aligned
  OType o_type = OType::bf16;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
};

// Contiguous BSHD strides from the extents.
void set_contiguous_strides(Fp8Params& p);

// nullptr when cuDNN runs p (building and caching the plan on first sight);
// else why not: a refusal made here, cuDNN absent, or cuDNN's own reason
// naming the graph step that failed. The string lives as long as the process.
const char* unsupported(const Fp8Params& p);
// cuDNN's workspace for p's plan; 0 when p is refused.
int64_t workspace_bytes(const Fp8Params& p);
// Enqueues the forward on `stream` (a cudaStream_t). Returns a cudaError_t:
// cudaErrorNotSupported for a refused problem, cudaErrorInvalidValue for a
// missing workspace or buffer, cudaErrorUnknown when cuDNN fails without a
// CUDA error; the message goes to stderr.
int launch(const Fp8Params& p, void* stream);

struct PlanInfo {
  int64_t engine_index = -1;  // cuDNN's global engine index
  int64_t workspace_bytes = 0;
};
// False (and *out untouched) when p is refused.
bool plan_info(const Fp8Params& p, PlanInfo* out);

}  // namespace fa::cudnn_sdpa_fp8
