// One cuDNN handle per device and one plan per (device, shape), built on first
// sight and kept for the process, refusals with their reasons included; and
// the execution of a cached plan. Shared by the forward and the backward.
#pragma once
#include <cudnn.h>

#include <mutex>
#include <string>
#include <vector>

#include "cudnn/sdpa_graph.h"

namespace fa::cudnn {

struct Device {
  cudnnHandle_t handle = nullptr;
  std::string refusal;  // set when no handle could be made on this device
  std::mutex run_mu;    // cudnnSetStream + execute on the shared handle
};

// The plan for `shape` on the current device, built on first sight (graph
// building and engine choice happen here, never in a launch). nullptr when
// there is none, with *why set to a reason that lives as long as the process.
const SdpaPlan* cached_plan(const SdpaShape& shape, Device** dev, const char** why);

// "9.19.0" for cudnnGetVersion()'s 91900.
std::string version_string(size_t version);

// Enqueues `plan` on `stream` (a cudaStream_t) with the variant pack's
// pointers, one per plan.uids entry, in that order. Returns a cudaError_t:
// a CUDA error under a failed execute as itself (the runner stops on sticky
// ones), any other cuDNN failure as cudaErrorUnknown, with cuDNN's message in
// *error.
int execute(Device& dev, const SdpaPlan& plan, std::vector<void*>& pointers, void* cudnn_workspace, void* stream,
            std::string* error);

}  // namespace fa::cudnn
