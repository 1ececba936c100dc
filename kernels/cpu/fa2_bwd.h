// FlashAttention-2's backward pass on the CPU (float32 buffers holding values
// already rounded to the problem's dtype, like the CPU forward kernels). It
// reads Q, K, V, O, LSE (as a forward left them) and dO, and writes dQ, dK, dV;
// any block_m x block_n, causal bottom-right, GQA/MQA, ragged tails. It counts
// the bytes it moves between full tensors and tiles into RunContext, which
// traffic_model_bwd(Family::fa2, ...) states as a formula.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/attn_params.h"
#include "core/run_context.h"
#include "core/types.h"

namespace fa {

// params: q, k, v, o, lse, dout in; dq, dk, dv out; a workspace of
// cpu_fa2_bwd_workspace_bytes (D and the float32 dQ accumulator).
void cpu_fa2_backward(const AttnParams&, const Tile&, RunContext&);
int64_t cpu_fa2_bwd_workspace_bytes(const AttnProblem&);

// Deliberate bugs, planted to prove the gradient check catches them (as
// CpuFault does for the forward). Never registered as kernels.
enum class CpuBwdFault {
  none,
  no_d_term,                  // dS = P * dP: the D = rowsum(dO * O) term is missing
  gqa_not_summed,             // dK, dV from the first query head of each group only
  causal_unmasked_recompute,  // P recomputed without the causal mask on diagonal blocks
  dq_unscaled,                // dQ missing the softmax scale
  dq_overwritten,             // each K/V block stores its dQ share instead of adding it
};
std::string_view to_string(CpuBwdFault);
const std::vector<CpuBwdFault>& planted_cpu_bwd_faults();  // every fault but none
void cpu_fa2_backward(const AttnParams&, const Tile&, RunContext&, CpuBwdFault);

}  // namespace fa
