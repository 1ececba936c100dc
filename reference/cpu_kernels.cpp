// Registers the CPU back end: cpu.standard, and cpu.fa1 / cpu.fa2 for a grid of
// tiles (64x64 the default), plus make_cpu_variant for tiles the sweep asks for.
#include "reference/cpu_kernels.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/errors.h"

namespace fa {
namespace {

// Standard attention holds S and P for every (batch, head); refuse a point whose
// workspace exceeds half this machine's memory rather than be killed by the OOM killer.
std::string refuse_standard(const AttnProblem& p) {
  const int64_t need = cpu_standard_workspace_bytes(p);
  const int64_t phys = int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
  if (phys > 0 && need > phys / 2)
    return fmt::format("standard attention needs {:.1f} GiB for S and P, over half of this "
                       "machine's {:.1f} GiB", need / 1073741824.0, phys / 1073741824.0);
  return "";
}

}  // namespace

KernelVariant make_cpu_variant(Family family, Tile tile) {
  KernelVariant v;
  v.family = family;
  v.backend = Backend::cpu;
  switch (family) {
    case Family::standard:
      v.name = "cpu.standard";
      v.tile = Tile{};
      v.refuse = refuse_standard;
      v.workspace_bytes = cpu_standard_workspace_bytes;
      v.run = [](const AttnParams& p, RunContext& ctx) { cpu_standard_forward(p, ctx); };
      return v;
    case Family::fa1:
    case Family::fa2: {
      if (tile.block_m <= 0 || tile.block_n <= 0 || tile.block_m > 4096 || tile.block_n > 4096)
        throw UsageError(fmt::format("cpu.{}: block_m and block_n must be in 1..4096 (got {}x{})",
                                     to_string(family), tile.block_m, tile.block_n));
      const Tile t{tile.block_m, tile.block_n, 0, 0};
      v.tile = t;
      v.name = fmt::format("cpu.{}.{}x{}", to_string(family), t.block_m, t.block_n);
      if (family == Family::fa1) {
        v.workspace_bytes = cpu_fa1_workspace_bytes;
        v.run = [t](const AttnParams& p, RunContext& ctx) { cpu_fa1_forward(p, t, ctx); };
      } else {
        v.workspace_bytes = [](const AttnProblem&) { return int64_t{0}; };
        v.run = [t](const AttnParams& p, RunContext& ctx) { cpu_fa2_forward(p, t, ctx); };
      }
      return v;
    }
    default:
      throw UsageError(fmt::format("no CPU implementation of family {} (cpu has standard, fa1, fa2)",
                                   to_string(family)));
  }
}

void register_cpu_kernels(Registry& r) {
  KernelVariant standard = make_cpu_variant(Family::standard, {});
  standard.default_tile = true;
  r.add(std::move(standard));
  for (Family f : {Family::fa1, Family::fa2})
    for (int bm : {16, 32, 64, 128})
      for (int bn : {16, 32, 64, 128}) {
        KernelVariant v = make_cpu_variant(f, Tile{bm, bn, 0, 0});
        v.default_tile = bm == 64 && bn == 64;
        r.add(std::move(v));
      }
}

}  // namespace fa
