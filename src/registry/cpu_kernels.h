// The CPU back end as registry variants: the entries of kernels/cpu/cpu_kernels.h,
// named cpu.standard, cpu.<family>.<block_m>x<block_n> and, for a backward,
// cpu.<family>.bwd.<block_m>x<block_n>.
#pragma once
#include "cpu/cpu_kernels.h"
#include "cpu/fa2_bwd.h"
#include "registry/kernel.h"

namespace fa {

// A CPU variant of `family` (standard, fa1, fa2; bwd: fa2) with any block_m x
// block_n (ignored for standard). A bwd variant's forward partner is the same
// family's forward at the same tile. Throws UsageError for a family or pass
// without a CPU kernel, or a bad tile.
KernelVariant make_cpu_variant(Family, Tile, Pass = Pass::fwd);
// "cpu.fa2.64x64+no_rescale": a cpu.fa2 variant with `fault` planted (never registered).
KernelVariant make_faulty_cpu_variant(CpuFault fault, Tile tile);
// "cpu.fa2.bwd.64x64+no_d_term": the same for cpu.fa2's backward.
KernelVariant make_faulty_cpu_variant(CpuBwdFault fault, Tile tile);

}  // namespace fa
