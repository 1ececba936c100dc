// AttnParams (e4m3 codes, their descales, O's scale) to cuDNN's FP8 forward
// (cudnn_sdpa_fp8.h): the refusals of settings its graph cannot express,
// cuDNN's workspace, and the launch. Host-compiled declarations: no cuDNN or
// CUDA headers.
#pragma once
#include <cstdint>

#include "common/attn_params.h"

namespace fa::cudnn_fp8_entry {

// The graph's P factors, which AttnParams does not carry: P is rounded to e4m3
// as P * kScaleS (the whole e4m3 range for P in [0, 1]) and descaled by
// 1 / kScaleS. They and the amax outputs live in a device block of
// fp8_entry.cu, written once when the module loads.
inline constexpr float kScaleS = 448.f;

// Refusals that need neither a device nor cuDNN: not e4m3 inputs, O not e4m3,
// descales not one per tensor. nullptr when none applies.
const char* settings_refusal(const AttnParams& p);

// cuDNN's workspace for p's plan (building and caching it).
int64_t workspace_bytes(const AttnParams& p);
// nullptr when cuDNN runs p; else why not (settings_refusal first, then
// cudnn_sdpa_fp8::unsupported: device, cuDNN version, shape, cuDNN's reason).
const char* unsupported(const AttnParams& p);
// Enqueues cuDNN's forward on `stream`, nothing else. Returns a cudaError_t
// (cudaErrorInvalidValue for a missing descale or O scale, or a workspace
// smaller than the plan's; cudaErrorNotSupported for a refused problem).
int launch(const AttnParams& p, void* stream);

}  // namespace fa::cudnn_fp8_entry
