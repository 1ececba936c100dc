// The CPU back end as registry variants: the entries of kernels/cpu/cpu_kernels.h,
// named cpu.standard and cpu.<family>.<block_m>x<block_n>.
#pragma once
#include "cpu/cpu_kernels.h"
#include "registry/kernel.h"

namespace fa {

// A CPU variant of `family` (standard, fa1, fa2) with any block_m x block_n
// (ignored for standard). Throws UsageError for other families or a bad tile.
KernelVariant make_cpu_variant(Family, Tile);
// "cpu.fa2.64x64+no_rescale": a cpu.fa2 variant with `fault` planted (never registered).
KernelVariant make_faulty_cpu_variant(CpuFault fault, Tile tile);

}  // namespace fa
