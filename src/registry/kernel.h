// A kernel variant: one compiled (or CPU) implementation with a fixed tile.
// The registry is the only place the rest of the tool learns what exists.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/attn_params.h"
#include "core/run_context.h"
#include "core/types.h"
#include "measure/traffic.h"
#include "measure/traffic_bwd.h"

namespace fa {

struct Support {
  bool ok = true;
  std::string reason;  // why not, when !ok ("head_dim 96 not built")
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

struct KernelVariant {
  std::string name;  // "fa2.bf16.hd128.128x64.w4.s2", "cpu.fa2.64x64", "fa2.bwd.bf16.hd128.128x128.w8.s2"
  Family family = Family::fa2;
  Backend backend = Backend::cpu;
  Pass pass = Pass::fwd;  // fwd or bwd: what run() computes
  Tile tile;
  bool default_tile = false;  // chosen by `--block auto` for its family/back end/pass/dtype/head_dim
  // A bwd variant's forward partner, by name: the forward that gives it O and
  // LSE (the default tile of the same family, back end, dtype and head_dim;
  // cpu.fa2.bwd.BMxBN: cpu.fa2.BMxBN). "" for a fwd variant.
  std::string fwd_partner;
  std::vector<DType> dtypes;  // empty: any
  // What a forward's run() writes O in where that is not output_dtype(problem
  // dtype): e4m3 for cuDNN's FP8 forward (O's codes scaled by
  // AttnParams::o_scale). The executor is told (Executor::set_o_dtype) so that
  // it reads O back as written.
  std::optional<DType> o_dtype;
  std::vector<int> head_dims; // empty: any
  // Extra, shape-dependent refusal ("" = ok); checked after dtype and head_dim.
  std::function<std::string(const AttnProblem&)> refuse;
  // A refusal that needs the point's buffers as the back end holds them ("" =
  // ok; unset: none), asked after `supports` with the executor's params: an
  // e4m3 kernel reads the descales' layout (per block of rows or not), which
  // the problem does not carry.
  std::function<std::string(const AttnParams&)> refuse_buffers;
  // Scratch bytes the run needs in params.workspace.
  std::function<int64_t(const AttnProblem&)> workspace_bytes;
  // Compute O and LSE (fwd) or dQ, dK, dV from O, LSE and dO (bwd). For cpu
  // kernels, buffers hold float32 values (already rounded to the problem's
  // dtype); for cuda kernels, the problem's dtype. Throws fa::KernelError on failure.
  std::function<void(const AttnParams&, RunContext&)> run;

  Support supports(const AttnProblem&) const;
  // Modelled HBM bytes of one run() (src/measure/traffic*.h); nullopt where the
  // family's backward is not modelled (cudnn). run: the device's SMs and the
  // row's FP8 settings, where the bytes depend on them.
  std::optional<Traffic> traffic(const AttnProblem& p, const TrafficRun& run = {}) const {
    if (pass == Pass::fwd) return traffic_model(family, p, tile, o_dtype, run);
    return traffic_model_bwd(family, p, tile);
  }
};

// What v's run() writes O in for p: v.o_dtype, else output_dtype(p.dtype).
inline DType o_dtype_of(const KernelVariant& v, const AttnProblem& p) {
  return v.o_dtype.value_or(output_dtype(p.dtype));
}

class Registry {
 public:
  static Registry& instance();  // holds cpu kernels, plus cuda kernels where built
  void add(KernelVariant v);
  const std::vector<KernelVariant>& all() const { return variants_; }
  const KernelVariant* find(std::string_view name) const;
  // Resolve a comma-separated selection of names, families ("fa2"), back ends
  // ("cpu", "cuda") or globs ("fa2.bf16.*"); throws UsageError naming an
  // entry that matches nothing. Order follows the registry.
  std::vector<const KernelVariant*> select(std::string_view selection) const;

 private:
  std::vector<KernelVariant> variants_;
};

// Registration hooks, called once by Registry::instance().
void register_cpu_kernels(Registry&);   // src/registry/cpu_kernels.cpp
void register_cuda_kernels(Registry&);  // src/registry/cuda_kernels.cpp (no-op without CUDA)

bool glob_match(std::string_view pattern, std::string_view text);  // '*' and '?'

}  // namespace fa
