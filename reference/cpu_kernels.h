// The CPU back end: standard attention, FlashAttention-1 (Algorithm 1) and
// FlashAttention-2 loop orders in float32, as registry variants. They run any
// shape (causal bottom-right, GQA, ragged blocks) and count the bytes they move
// between full tensors and tiles into RunContext (see docs/MEASUREMENT.md).
#pragma once
#include "core/types.h"
#include "registry/kernel.h"

namespace fa {

// A CPU variant of `family` (standard, fa1, fa2) with any block_m x block_n
// (ignored for standard). Throws UsageError for other families or a bad tile.
KernelVariant make_cpu_variant(Family, Tile);

// The entry points behind the variants (params: float32 storage, see cpu_common.h).
void cpu_standard_forward(const AttnParams&, RunContext&);
void cpu_fa1_forward(const AttnParams&, const Tile&, RunContext&);
void cpu_fa2_forward(const AttnParams&, const Tile&, RunContext&);

int64_t cpu_standard_workspace_bytes(const AttnProblem&);  // S and P for every (batch, head)
int64_t cpu_fa1_workspace_bytes(const AttnProblem&);       // m and l for every row

}  // namespace fa
