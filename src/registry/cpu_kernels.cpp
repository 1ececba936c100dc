// Registers the CPU back end: cpu.standard, and cpu.fa1 / cpu.fa2 / cpu.fa2.bwd
// at every tile of the CPU tile table (kernels/cpu/cpu_kernels.h), plus the
// variants a sweep or fa-check makes on request.
#include "registry/cpu_kernels.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fa {
namespace {

const CpuKernelEntry* cpu_entry(Family family, Pass pass) {
  for (const CpuKernelEntry& e : cpu_kernel_entries())
    if (e.family == family && e.pass == pass) return &e;
  return nullptr;
}

// "cpu.fa2", "cpu.fa2.bwd": what a variant's name starts with.
std::string name_stem(Family family, Pass pass) {
  return fmt::format("cpu.{}{}", to_string(family), pass == Pass::bwd ? ".bwd" : "");
}

std::string variant_name(Family family, Pass pass, const Tile& t) {
  return fmt::format("{}.{}x{}", name_stem(family, pass), t.block_m, t.block_n);
}

}  // namespace

KernelVariant make_cpu_variant(Family family, Tile tile, Pass pass) {
  const CpuKernelEntry* e = cpu_entry(family, pass);
  if (!e)
    throw UsageError(fmt::format("no CPU implementation of the {} pass of family {} (cpu has standard, fa1, "
                                 "fa2 forward and fa2 backward)",
                                 to_string(pass), to_string(family)));
  KernelVariant v;
  v.family = family;
  v.backend = Backend::cpu;
  v.pass = pass;
  if (e->tiled) {
    if (tile.block_m <= 0 || tile.block_n <= 0 || tile.block_m > kCpuMaxBlock || tile.block_n > kCpuMaxBlock)
      throw UsageError(fmt::format("{}: block_m and block_n must be in 1..{} (got {}x{})", name_stem(family, pass),
                                   kCpuMaxBlock, tile.block_m, tile.block_n));
    v.tile = Tile{tile.block_m, tile.block_n, 0, 0};
    v.name = variant_name(family, pass, v.tile);
    if (pass == Pass::bwd) v.fwd_partner = variant_name(family, Pass::fwd, v.tile);
  } else {
    v.name = name_stem(family, pass);
    if (pass == Pass::bwd) v.fwd_partner = name_stem(family, Pass::fwd);
  }
  // The CPU kernels compute in float32 on float inputs: on the dequantized
  // values of e4m3 inputs they would be a float32 attention, not an FP8 one,
  // and their row would say nothing about FP8.
  v.refuse = [refuse = e->refuse](const AttnProblem& p) -> std::string {
    if (p.dtype == DType::e4m3)
      return "the cpu kernels have no FP8 path (they would compute in float32 on the dequantized inputs)";
    return refuse ? refuse(p) : "";
  };
  v.workspace_bytes = e->workspace_bytes;
  const Tile t = v.tile;
  const auto run = e->run;
  v.run = [run, t](const AttnParams& p, RunContext& ctx) { run(p, t, ctx); };
  return v;
}

namespace {

// v with `fault` planted: named "<v.name>+<fault>", running `faulty`.
template <typename Fault>
KernelVariant planted(KernelVariant v, Fault fault,
                      void (*faulty)(const AttnParams&, const Tile&, RunContext&, Fault)) {
  if (fault == Fault::none) return v;
  // Appended in two steps: "+" + std::string(...) trips GCC 12's -Wrestrict false positive.
  v.name += '+';
  v.name += to_string(fault);
  const Tile t = v.tile;
  v.run = [t, fault, faulty](const AttnParams& p, RunContext& ctx) { faulty(p, t, ctx, fault); };
  return v;
}

}  // namespace

KernelVariant make_faulty_cpu_variant(CpuFault fault, Tile tile) {
  return planted(make_cpu_variant(Family::fa2, tile), fault, &cpu_fa2_forward);
}

KernelVariant make_faulty_cpu_variant(CpuBwdFault fault, Tile tile) {
  return planted(make_cpu_variant(Family::fa2, tile, Pass::bwd), fault, &cpu_fa2_backward);
}

void register_cpu_kernels(Registry& r) {
  for (const CpuKernelEntry& e : cpu_kernel_entries()) {
    if (!e.tiled) {
      KernelVariant v = make_cpu_variant(e.family, {}, e.pass);
      v.default_tile = true;
      r.add(std::move(v));
      continue;
    }
    for (int bm : kCpuBlockSizes)
      for (int bn : kCpuBlockSizes) {
        KernelVariant v = make_cpu_variant(e.family, Tile{bm, bn, 0, 0}, e.pass);
        v.default_tile = v.tile == kCpuDefaultTile;
        r.add(std::move(v));
      }
  }
}

}  // namespace fa
