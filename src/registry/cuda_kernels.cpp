// GPU variants from the generated table of compiled instantiations
// (cmake/fa_instances.cmake). Host-only code: the entry points hide CUDA, so
// this compiles in every build; without CUDA kernels the table is empty.
#include <fmt/format.h>
#include <stdexcept>

#include "common/gpu_entry.h"
#include "core/errors.h"
#include "registry/kernel.h"

namespace fa {
namespace {

std::string_view elem_name(ElemType t) {
  switch (t) {
    case ElemType::f16: return "fp16";
    case ElemType::bf16: return "bf16";
    case ElemType::f32: return "fp32";
  }
  return "?";
}

DType dtype_of(ElemType t) {
  switch (t) {
    case ElemType::f16: return DType::f16;
    case ElemType::bf16: return DType::bf16;
    case ElemType::f32: return DType::f32;
  }
  return DType::f32;
}

// cudaError_t values after which the context is unusable (illegal address,
// hardware stack error, illegal instruction, misaligned address, invalid pc,
// launch failure): 700 and 714..719. The sweep must stop after one of these.
bool sticky_error(int code) { return code == 700 || (code >= 714 && code <= 719); }

KernelVariant make_gpu_variant(const GpuKernelEntry& e) {
  KernelVariant v;
  auto family = parse_family(e.family);
  if (!family)
    throw std::logic_error(fmt::format("generated GPU entry with unknown family '{}'", e.family));
  v.family = *family;
  v.backend = Backend::cuda;
  v.tile = Tile{e.block_m, e.block_n, e.warps, e.stages};
  v.name = e.head_dim == 0
               ? fmt::format("{}.{}", e.family, elem_name(e.dtype))
               : fmt::format("{}.{}.hd{}.{}x{}.w{}.s{}", e.family, elem_name(e.dtype), e.head_dim,
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
      throw KernelError(fmt::format("{}: launch returned cudaError {}", name, rc), sticky_error(rc));
  };
  return v;
}

}  // namespace

void register_cuda_kernels(Registry& r) {
  for (const GpuKernelEntry& e : gpu_kernel_entries()) r.add(make_gpu_variant(e));
}

}  // namespace fa
