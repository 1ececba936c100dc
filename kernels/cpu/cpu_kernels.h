// The CPU back end: standard attention, FlashAttention-1 (Algorithm 1) and
// FlashAttention-2 loop orders in float32, and FlashAttention-2's backward
// (fa2_bwd.h). They run any shape (causal bottom-right, GQA, ragged blocks) and
// count the bytes they move between full tensors and tiles into RunContext
// (docs/MEASUREMENT.md). Like the GPU kernels
// (common/gpu_entry.h) they present themselves as a plain table of entries,
// which src/registry/cpu_kernels.cpp turns into registry variants.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/attn_params.h"
#include "core/run_context.h"
#include "core/types.h"

namespace fa {

struct CpuKernelEntry {
  Family family;  // standard, fa1, fa2
  Pass pass;      // fwd: O and LSE; bwd: dQ, dK, dV from O, LSE and dO
  bool tiled;     // runs at any block_m x block_n (fa1, fa2); false: takes no tile (standard)
  // Scratch bytes the run needs in params.workspace.
  int64_t (*workspace_bytes)(const AttnProblem&);
  // "" when the kernel can run the problem, else why not; null: every problem.
  std::string (*refuse)(const AttnProblem&);
  // The pass into params (float32 buffers holding values already rounded to the
  // problem's dtype; see cpu_common.h). Throws fa::KernelError.
  void (*run)(const AttnParams&, const Tile&, RunContext&);
};

// standard, fa1, fa2 forward, then fa2 backward.
const std::vector<CpuKernelEntry>& cpu_kernel_entries();

// The tiled entries' tile table: every block_m x block_n from kCpuBlockSizes is
// registered (any other in 1..kCpuMaxBlock is made when a sweep asks for it), and
// kCpuDefaultTile is what `--block auto` runs.
inline constexpr int kCpuBlockSizes[] = {16, 32, 64, 128};
inline constexpr int kCpuMaxBlock = 4096;
inline constexpr Tile kCpuDefaultTile{64, 64, 0, 0};

// The entry points behind the table.
void cpu_standard_forward(const AttnParams&, const Tile&, RunContext&);
void cpu_fa1_forward(const AttnParams&, const Tile&, RunContext&);
void cpu_fa2_forward(const AttnParams&, const Tile&, RunContext&);
int64_t cpu_standard_workspace_bytes(const AttnProblem&);  // S and P for every (batch, head)
int64_t cpu_fa1_workspace_bytes(const AttnProblem&);       // m and l for every row

// Deliberate bugs that `fa-check --self-test` plants in cpu.fa2 to prove the
// check catches them. Never in the table: only a faulty variant made on request
// (src/registry/cpu_kernels.h) runs them.
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

}  // namespace fa
