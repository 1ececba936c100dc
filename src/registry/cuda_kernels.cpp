// GPU variants from the generated table of compiled instantiations
// (cmake/fa_instances.cmake). Host-only code: the entry points hide CUDA, so
// this compiles in every build; without CUDA kernels the table is empty.
// Error text comes through measure/cuda_error.h (a .cu, or a stand-in without CUDA).
#include <fmt/format.h>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "common/gpu_entry.h"
#include "common/problem_params.h"
#include "core/errors.h"
#include "measure/cuda_error.h"
#include "registry/kernel.h"

namespace fa {
namespace {


// The tile `--block auto` picks per family and head_dim (both dtypes), measured
// fastest on an H200 with the paper-fwd sweep (docs/PERF_NOTES.md, FA1/FA2/standard).
// A (family, dtype, head_dim) group with no entry here defaults to the first tile
// its instances.cmake lists, so a family states its default by order.
struct PreferredTile {
  const char* family;
  int head_dim;
  Tile tile;
};
constexpr PreferredTile kPreferred[] = {
    {"fa2", 64, {128, 64, 4, 2}},   // 1.04-1.08x torch flash, seqlen 1k-16k
    {"fa2", 128, {128, 64, 4, 2}},  // 1.02-1.07x torch flash (128x32.w4: 0.97-1.01)
    {"fa2", 256, {128, 64, 8, 2}},  // 8 warps, one m-tile each
    {"fa1", 64, {128, 128, 8, 2}},  // block_n 128 halves the float32 O round trips
    {"fa1", 128, {64, 256, 8, 2}},  // split columns, B_c 256: 0.49-0.54x fa2 (64x128.w4: 0.45-0.54)
    {"fa1", 256, {32, 128, 8, 2}},  // split columns + O prefetch: 0.40-0.49x fa2 (128x32.w8: 0.13-0.17)
};

KernelVariant make_gpu_variant(const GpuKernelEntry& e) {
  KernelVariant v;
  auto family = parse_family(e.family);
  if (!family)
    throw std::logic_error(fmt::format("generated GPU entry with unknown family '{}'", e.family));
  v.family = *family;
  v.backend = Backend::cuda;
  v.tile = Tile{e.block_m, e.block_n, e.warps, e.stages};
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

// Marks one default_tile per (family, dtype, head_dim): the preferred tile where
// it was built, else the group's first entry.
void mark_default_tiles(std::vector<KernelVariant>& vs) {
  auto group = [](const KernelVariant& v) {
    return std::tuple(v.family, v.dtypes.front(), v.head_dims.empty() ? 0 : v.head_dims.front());
  };
  for (size_t i = 0; i < vs.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || group(vs[j]) == group(vs[i]);
    if (seen) continue;  // this group was settled at its first member
    size_t pick = i;
    for (size_t j = i; j < vs.size(); ++j) {
      if (group(vs[j]) != group(vs[i])) continue;
      for (const auto& pref : kPreferred)
        if (to_string(vs[j].family) == pref.family && std::get<2>(group(vs[j])) == pref.head_dim &&
            vs[j].tile == pref.tile)
          pick = j;
    }
    vs[pick].default_tile = true;
  }
}

}  // namespace

void register_cuda_kernels(Registry& r) {
  std::vector<KernelVariant> vs;
  for (const GpuKernelEntry& e : gpu_kernel_entries()) {
    // Backward instantiations are checked by their standalone program until
    // the sweep runs the backward pass.
    if (std::string_view(e.pass) != "fwd") continue;
    vs.push_back(make_gpu_variant(e));
  }
  mark_default_tiles(vs);
  for (auto& v : vs) r.add(std::move(v));
}

}  // namespace fa
