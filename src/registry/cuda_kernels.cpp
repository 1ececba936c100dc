// GPU variants from the generated table of compiled instantiations
// (cmake/fa_instances.cmake), forward and backward, and on request from the
// table of planted ones. Host-only code: the entry points hide CUDA, so this
// compiles in every build; without CUDA kernels the tables are empty. Error
// text comes through measure/cuda_error.h (a .cu, or a stand-in without CUDA).
#include "registry/cuda_kernels.h"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "common/gpu_entry.h"
#include "common/problem_params.h"
#include "core/errors.h"
#include "measure/cuda_error.h"
#include "registry/kernel.h"

namespace fa {
namespace {

bool is_bwd(const GpuKernelEntry& e) { return std::string_view(e.pass) == "bwd"; }

// "fa2.bf16.hd128.128x64.w4.s2", "fa2.bwd.bf16.hd128.128x128.w8.s2", "cudnn.bwd.bf16".
std::string variant_name(const GpuKernelEntry& e) {
  const std::string stem =
      fmt::format("{}{}.{}", e.family, is_bwd(e) ? ".bwd" : "", to_string(dtype_of(e.dtype)));
  if (e.head_dim == 0) return stem;
  return fmt::format("{}.hd{}.{}x{}.w{}.s{}", stem, e.head_dim, e.block_m, e.block_n, e.warps, e.stages);
}

// The forward that gives backward entry `b` its O and LSE: the default tile of
// the same family, dtype and head_dim. "" when none is built.
std::string forward_partner(const GpuKernelEntry& b) {
  for (const GpuKernelEntry& e : gpu_kernel_entries())
    if (!is_bwd(e) && e.default_tile && std::string_view(e.family) == b.family && e.dtype == b.dtype &&
        e.head_dim == b.head_dim)
      return variant_name(e);
  return "";
}

// The params a refusal is asked with. A backward entry may refuse null or
// misaligned tensor addresses (fa3's TMA maps); the executors hand it
// contiguous, 256-byte aligned (cudaMalloc) buffers, so distinct aligned
// placeholders (never dereferenced) stand for them here.
AttnParams refusal_params(const GpuKernelEntry& e, const AttnProblem& p, bool backward) {
  AttnParams a = make_params(p, elem_type(p.dtype));
  a.o_dtype = e.o_dtype();
  if (!backward) return a;
  auto at = [](uintptr_t i) { return reinterpret_cast<void*>(i << 20); };
  a.q = at(1), a.k = at(2), a.v = at(3), a.o = at(4), a.lse = static_cast<float*>(at(5));
  a.dout = at(6), a.dq = at(7), a.dk = at(8), a.dv = at(9);
  return a;
}

// `suffix` ("+no_d_term") names a planted copy.
KernelVariant make_gpu_variant(const GpuKernelEntry& e, std::string_view suffix = "") {
  KernelVariant v;
  auto family = parse_family(e.family);
  if (!family)
    throw std::logic_error(fmt::format("generated GPU entry with unknown family '{}'", e.family));
  v.family = *family;
  v.backend = Backend::cuda;
  v.pass = is_bwd(e) ? Pass::bwd : Pass::fwd;
  v.tile = Tile{e.block_m, e.block_n, e.warps, e.stages};
  v.default_tile = e.default_tile;
  v.name = variant_name(e);
  v.name += suffix;
  if (v.pass == Pass::bwd) v.fwd_partner = forward_partner(e);
  v.dtypes = {dtype_of(e.dtype)};
  if (const DType o = dtype_of(e.o_dtype()); o != output_dtype(dtype_of(e.dtype))) v.o_dtype = o;
  if (e.head_dim != 0) v.head_dims = {e.head_dim};
  const bool backward = v.pass == Pass::bwd, orphan = backward && v.fwd_partner.empty();
  v.refuse = [e, backward, orphan](const AttnProblem& p) -> std::string {
    if (orphan) return "no forward of this family, dtype and head_dim is built to give it O and LSE";
    const char* why = e.unsupported(refusal_params(e, p, backward));
    return why ? why : "";
  };
  if (e.dtype == ElemType::e4m3)
    v.refuse_buffers = [e](const AttnParams& a) -> std::string {
      const char* why = e.unsupported(a);
      return why ? why : "";
    };
  v.workspace_bytes = [e](const AttnProblem& p) { return e.workspace_bytes(refusal_params(e, p, false)); };
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
  for (const GpuKernelEntry& e : gpu_kernel_entries()) r.add(make_gpu_variant(e));
}

std::vector<PlantedGpuVariants> planted_gpu_variants() {
  std::vector<PlantedGpuVariants> out;
  for (const PlantedGpuKernelEntry& e : planted_gpu_kernel_entries()) {
    const std::string base = variant_name(e.kernel);
    auto it = std::find_if(out.begin(), out.end(), [&](const PlantedGpuVariants& p) { return p.base == base; });
    if (it == out.end()) it = out.insert(out.end(), PlantedGpuVariants{base, {}});
    it->faults.emplace_back(e.fault);
  }
  return out;
}

std::optional<KernelVariant> make_planted_gpu_variant(std::string_view base, std::string_view fault) {
  for (const PlantedGpuKernelEntry& e : planted_gpu_kernel_entries()) {
    if (variant_name(e.kernel) != base || fault != e.fault) continue;
    KernelVariant v = make_gpu_variant(e.kernel, fmt::format("+{}", fault));
    v.default_tile = false;
    return v;
  }
  return std::nullopt;
}

}  // namespace fa
