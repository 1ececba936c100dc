// Deliberate bugs that `fa-check --self-test --backend cuda` plants in the fa3
// backward to prove the gradient check catches them on the GPU, as CpuBwdFault
// does on the CPU (kernels/cpu/fa2_bwd.h). A template argument of the kernel
// (Fa3BwdKernel's last, read as Fa3BwdTraits::kFault): `none`, the registered
// kernels' value, compiles every planted line away. Plain C++ (no CUDA) so the
// host side can name the faults too.
#pragma once
#include <array>
#include <string_view>

namespace fa {

enum class Fa3BwdFault {
  none,
  no_d_term,                  // dS^T = P^T o dP^T: the D = rowsum(dO o O) term is missing
  gqa_not_summed,             // dK, dV restart at each query head of the group: only the last one's share
  causal_unmasked_recompute,  // P recomputed without the causal mask on diagonal blocks
  dq_unscaled,                // dQ missing the softmax scale (the post-pass is handed 1)
  dq_overwritten,             // each K/V block stores its dQ share instead of adding it
};

// Every fault but none, in the order above.
inline constexpr std::array<Fa3BwdFault, 5> kPlantedFa3BwdFaults = {
    Fa3BwdFault::no_d_term, Fa3BwdFault::gqa_not_summed, Fa3BwdFault::causal_unmasked_recompute,
    Fa3BwdFault::dq_unscaled, Fa3BwdFault::dq_overwritten};

constexpr std::string_view to_string(Fa3BwdFault f) {
  switch (f) {
    case Fa3BwdFault::none: return "none";
    case Fa3BwdFault::no_d_term: return "no_d_term";
    case Fa3BwdFault::gqa_not_summed: return "gqa_not_summed";
    case Fa3BwdFault::causal_unmasked_recompute: return "causal_unmasked_recompute";
    case Fa3BwdFault::dq_unscaled: return "dq_unscaled";
    case Fa3BwdFault::dq_overwritten: return "dq_overwritten";
  }
  return "?";
}

}  // namespace fa
