// The cudnn family's entry points, shared by its two instantiations (bf16, fp16).
// Host-compiled declarations: no cuDNN or CUDA headers, so the .cuh stays light.
#pragma once
#include <cstdint>

#include "common/attn_params.h"

namespace fa::cudnn_sdpa {

// The plan's workspace for p (building and caching the plan on first sight); 0
// when p is refused.
int64_t workspace_bytes(const AttnParams& p);
// nullptr when cuDNN runs p; else why not (cuDNN absent, shape refused, cuDNN's
// own reason). The string lives as long as the process.
const char* unsupported(const AttnParams& p);
// Enqueues the forward on `stream` (a cudaStream_t). Returns a cudaError_t:
// cudaErrorNotSupported for a refused problem, cudaErrorInvalidValue for a
// missing workspace, cudaErrorUnknown when cuDNN fails without a CUDA error
// (not sticky); cuDNN's message goes to stderr.
int launch(const AttnParams& p, void* stream);
// "9.19.0" of the library loaded at run time, "" where cuDNN cannot be used.
const char* runtime_version();

}  // namespace fa::cudnn_sdpa
