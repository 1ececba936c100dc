// The cudnn family's entry points, shared by its instantiations (forward and
// backward, bf16 and fp16). Host-compiled declarations: no cuDNN or CUDA
// headers, so the .cuh stays light.
#pragma once
#include <cstdint>

#include "common/attn_params.h"
#include "cudnn/sdpa_pass.h"

namespace fa::cudnn_sdpa {

using cudnn::SdpaPass;

// The workspace `pass` needs for p (building and caching the plan on first
// sight); 0 when p is refused. Backward: cuDNN's plan workspace plus the
// softmax-sum and dQ-accumulator scratch its graph keeps in memory.
int64_t workspace_bytes(const AttnParams& p, SdpaPass pass);
// nullptr when cuDNN runs `pass` for p; else why not (cuDNN absent, shape
// refused, cuDNN's own reason). The string lives as long as the process.
const char* unsupported(const AttnParams& p, SdpaPass pass);
// Enqueues `pass` on `stream` (a cudaStream_t). Returns a cudaError_t:
// cudaErrorNotSupported for a refused problem, cudaErrorInvalidValue for a
// missing workspace or buffer, cudaErrorUnknown when cuDNN fails without a
// CUDA error (not sticky); cuDNN's message goes to stderr.
int launch(const AttnParams& p, SdpaPass pass, void* stream);

// What cuDNN chose for p, for logs and the standalone check.
struct PlanInfo {
  int64_t engine_index = -1;      // cuDNN's global engine index
  int64_t workspace_bytes = 0;    // as workspace_bytes(p, pass)
  bool nondeterministic = false;  // the engine carries cuDNN's nondeterministic note
  bool padding_mask = false;      // the graph holds the cuDNN <= 9.15.0 padding workaround
};
// False (and *out untouched) when p is refused.
bool plan_info(const AttnParams& p, SdpaPass pass, PlanInfo* out);

// "9.19.0" of the library loaded at run time, "" where cuDNN cannot be used.
const char* runtime_version();

}  // namespace fa::cudnn_sdpa
