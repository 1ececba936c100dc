// How a compiled GPU kernel instantiation presents itself to the host tool.
// Generated code (cmake/fa_instances.cmake) fills one entry per instantiation;
// the registry turns entries into KernelVariants. Host-compiled: no CUDA headers.
#pragma once
#include <cstdint>
#include <vector>

#include "common/attn_params.h"

namespace fa {

struct GpuKernelEntry {
  const char* family;  // "standard", "fa1", "fa2", "fa3"
  const char* pass;    // "fwd" or "bwd": which pass launch() runs
  ElemType dtype;
  int head_dim;        // 0: any head_dim the kernel accepts at run time
  int block_m, block_n, warps, stages;
  // The tile `--block auto` runs for this family, pass, dtype and head_dim: the
  // one marked "*" in the family's instances.cmake, else its group's first.
  bool default_tile;
  // Scratch the launch needs in p.workspace (0 if none); may depend on the shape.
  int64_t (*workspace_bytes)(const AttnParams& p);
  // nullptr if the kernel can run p, else a static string saying why not.
  const char* (*unsupported)(const AttnParams& p);
  // Enqueue the pass on `stream` (a cudaStream_t). Returns a cudaError_t as int
  // (0 = launched). Must not synchronise.
  int (*launch)(const AttnParams& p, void* stream);
  // What the forward writes O in (o_dtype_of in attn_params.h): launch and
  // unsupported expect p.o_dtype to say the same.
  ElemType (*o_dtype)();
};

// Every instantiation this build compiled (empty when built without CUDA kernels).
const std::vector<GpuKernelEntry>& gpu_kernel_entries();

// An instantiation with a deliberate bug compiled in, for `fa-check --self-test
// --backend cuda` (fa_add_planted_bwd_instances in cmake/fa_instances.cmake).
// Never registered: the registry does not read this table, fa-check builds a
// variant from it when asked for one by name.
struct PlantedGpuKernelEntry {
  GpuKernelEntry kernel;  // the family, pass, dtype and tile of the registered default it copies
  const char* fault;      // the family's fault enum value, by name ("no_d_term": fa3/fa3_bwd_fault.h)
};

// Every planted instantiation this build compiled: fa3's backward at bf16 and
// head_dim 128 when those are built, else none.
const std::vector<PlantedGpuKernelEntry>& planted_gpu_kernel_entries();

}  // namespace fa
