// AttnParams (e4m3 codes, their descales, O's scale) to cuDNN's FP8 forward
// (cudnn_sdpa_fp8.h): the refusals of settings its graph cannot express, the
// workspace (the graph's own factors and amax outputs, then cuDNN's), and the
// launch. Host-compiled declarations: no cuDNN or CUDA headers.
#pragma once
#include <cstdint>

#include "common/attn_params.h"

namespace fa::cudnn_fp8_entry {

// The factors and outputs of the graph that AttnParams does not carry, at the
// start of the workspace: scale_s and descale_s (P is rounded to e4m3 as
// P * 448, the whole e4m3 range for P in [0, 1], and descaled by 1 / 448), and
// the amax outputs, zeroed before every launch. cuDNN's workspace follows at
// kScalarBytes, 256-byte aligned like every workspace cudaMalloc hands out.
inline constexpr int64_t kScalarBytes = 256;
inline constexpr float kScaleS = 448.f;

// Refusals that need neither a device nor cuDNN: not e4m3 inputs, O not e4m3,
// descales not one per tensor. nullptr when none applies.
const char* settings_refusal(const AttnParams& p);

// kScalarBytes + cuDNN's workspace for p's plan (building and caching it).
int64_t workspace_bytes(const AttnParams& p);
// nullptr when cuDNN runs p; else why not (settings_refusal first, then
// cudnn_sdpa_fp8::unsupported: device, cuDNN version, shape, cuDNN's reason).
const char* unsupported(const AttnParams& p);
// Writes the scalars, zeroes the amax outputs, enqueues cuDNN's forward on
// `stream`. Returns a cudaError_t (cudaErrorInvalidValue for a missing buffer,
// descale, O scale or workspace; cudaErrorNotSupported for a refused problem).
int launch(const AttnParams& p, void* stream);

}  // namespace fa::cudnn_fp8_entry
