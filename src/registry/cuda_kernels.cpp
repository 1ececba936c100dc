// GPU variants from the generated table of compiled instantiations
// (cmake/fa_instances.cmake). Host-only code: the entry points hide CUDA, so
// this compiles in every build; without CUDA kernels the table is empty.
// Error text comes through measure/cuda_error.h (a .cu, or a stand-in without CUDA).
#include <fmt/format.h>
#include <stdexcept>
#include <string_view>

#include "common/gpu_entry.h"
#include "common/problem_params.h"
#include "core/errors.h"
#include "measure/cuda_error.h"
#include "registry/kernel.h"

namespace fa {
namespace {

KernelVariant make_gpu_variant(const GpuKernelEntry& e) {
  KernelVariant v;
  auto family = parse_family(e.family);
  if (!family)
    throw std::logic_error(fmt::format("generated GPU entry with unknown family '{}'", e.family));
  v.family = *family;
  v.backend = Backend::cuda;
  v.tile = Tile{e.block_m, e.block_n, e.warps, e.stages};
  v.default_tile = e.default_tile;
  v.name = e.head_dim == 0
               ? fmt::format("{}.{}", e.family, to_string(dtype_of(e.dtype)))
               : fmt::format("{}.{}.hd{}.{}x{}.w{}.s{}", e.family, to_string(dtype_of(e.dtype)), e.head_dim,
                             e.block_m, e.block_n, e.warps, e.stages);
  v.dtypes = {dtype_of(e.dtype)};
  if (e.head_dim != 0) v.head_dims = {e.head_dim};
  v.refuse = [e](const AttnProblem& p) -> std::string {
    const char* why = e.unsupported(make_params(p, elem_type(p.dtype)));
    return why ? why : "";
  };
  v.workspace_bytes = [e](const AttnProblem& p) {
    return e.workspace_bytes(make_params(p, elem_type(p.dtype)));
  };
  const std::string name = v.name;
  v.run = [e, name](const AttnParams& params, RunContext& ctx) {
    const int rc = e.launch(params, ctx.stream);
    if (rc != 0)
      throw KernelError(fmt::format("{}: launch failed with {} ({})", name, cuda_error_string(rc), rc),
                        cuda_error_is_sticky(rc));
  };
  return v;
}

}  // namespace

void register_cuda_kernels(Registry& r) {
  for (const GpuKernelEntry& e : gpu_kernel_entries()) {
    // Backward instantiations are checked by their standalone program until
    // the sweep runs the backward pass.
    if (std::string_view(e.pass) != "fwd") continue;
    r.add(make_gpu_variant(e));
  }
}

}  // namespace fa
