// The CPU back end: standard attention, FlashAttention-1 (Algorithm 1) and
// FlashAttention-2 loop orders in float32, as registry variants. They run any
// shape (causal bottom-right, GQA, ragged blocks) and count the bytes they move
// between full tensors and tiles into RunContext (see docs/MEASUREMENT.md).
#pragma once
#include <string_view>
#include <vector>

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

// Deliberate bugs that `fa-check --self-test` plants in cpu.fa2 to prove the
// check catches them. Never registered: only make_faulty_cpu_variant builds them.
enum class CpuFault {
  none,
  no_rescale,            // O not rescaled by e^(m_old - m_new) when the row max grows
  causal_off_by_one,     // causal rows see one key past the diagonal
  ragged_tail_unmasked,  // a last K/V block shorter than block_n is used at full width (stale keys)
  lse_unscaled,          // LSE = (m + log l) / softmax_scale, i.e. in unscaled score units
  row_not_written,       // the last query row of each (batch, head) is never written
};
std::string_view to_string(CpuFault);
const std::vector<CpuFault>& planted_cpu_faults();  // every fault but none
void cpu_fa2_forward(const AttnParams&, const Tile&, RunContext&, CpuFault);
// "cpu.fa2.64x64+no_rescale": a cpu.fa2 variant with `fault` planted.
KernelVariant make_faulty_cpu_variant(CpuFault fault, Tile tile);

int64_t cpu_standard_workspace_bytes(const AttnProblem&);  // S and P for every (batch, head)
int64_t cpu_fa1_workspace_bytes(const AttnProblem&);       // m and l for every row

}  // namespace fa
