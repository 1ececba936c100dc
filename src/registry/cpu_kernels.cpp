// Registers the CPU back end: cpu.standard, and cpu.fa1 / cpu.fa2 at every tile
// of the CPU tile table (kernels/cpu/cpu_kernels.h), plus the variants a sweep or
// fa-check makes on request.
#include "registry/cpu_kernels.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fa {
namespace {

const CpuKernelEntry* cpu_entry(Family family) {
  for (const CpuKernelEntry& e : cpu_kernel_entries())
    if (e.family == family) return &e;
  return nullptr;
}

}  // namespace

KernelVariant make_cpu_variant(Family family, Tile tile) {
  const CpuKernelEntry* e = cpu_entry(family);
  if (!e)
    throw UsageError(fmt::format("no CPU implementation of family {} (cpu has standard, fa1, fa2)",
                                 to_string(family)));
  KernelVariant v;
  v.family = family;
  v.backend = Backend::cpu;
  if (e->tiled) {
    if (tile.block_m <= 0 || tile.block_n <= 0 || tile.block_m > kCpuMaxBlock || tile.block_n > kCpuMaxBlock)
      throw UsageError(fmt::format("cpu.{}: block_m and block_n must be in 1..{} (got {}x{})", to_string(family),
                                   kCpuMaxBlock, tile.block_m, tile.block_n));
    v.tile = Tile{tile.block_m, tile.block_n, 0, 0};
    v.name = fmt::format("cpu.{}.{}x{}", to_string(family), v.tile.block_m, v.tile.block_n);
  } else {
    v.name = fmt::format("cpu.{}", to_string(family));
  }
  if (e->refuse) v.refuse = e->refuse;
  v.workspace_bytes = e->workspace_bytes;
  const Tile t = v.tile;
  const auto run = e->run;
  v.run = [run, t](const AttnParams& p, RunContext& ctx) { run(p, t, ctx); };
  return v;
}

KernelVariant make_faulty_cpu_variant(CpuFault fault, Tile tile) {
  KernelVariant v = make_cpu_variant(Family::fa2, tile);
  if (fault == CpuFault::none) return v;
  // Appended in two steps: "+" + std::string(...) trips GCC 12's -Wrestrict false positive.
  v.name += '+';
  v.name += to_string(fault);
  const Tile t = v.tile;
  v.run = [t, fault](const AttnParams& p, RunContext& ctx) { cpu_fa2_forward(p, t, ctx, fault); };
  return v;
}

void register_cpu_kernels(Registry& r) {
  for (const CpuKernelEntry& e : cpu_kernel_entries()) {
    if (!e.tiled) {
      KernelVariant v = make_cpu_variant(e.family, {});
      v.default_tile = true;
      r.add(std::move(v));
      continue;
    }
    for (int bm : kCpuBlockSizes)
      for (int bn : kCpuBlockSizes) {
        KernelVariant v = make_cpu_variant(e.family, Tile{bm, bn, 0, 0});
        v.default_tile = v.tile == kCpuDefaultTile;
        r.add(std::move(v));
      }
  }
}

}  // namespace fa
