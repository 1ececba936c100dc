// A standard (unfused) attention backward in the problem's dtype: the baseline
// the gradient tolerance rule measures a kernel against (docs/MEASUREMENT.md).
// It stores every intermediate as an unfused bf16/fp16 implementation does;
// arithmetic is float32, "stored" means rounded to the dtype (fp32: no-op):
//   S  = scale * (Q K^T)       float32 GEMM, stored
//   P  = softmax(S)            float32 row max, exp and sum over the stored S, stored
//   dP = dO V^T                float32 GEMM, stored
//   D_i = sum_j P_ij dP_ij     float32 from the stored P and dP (a framework's softmax
//                              backward; FlashAttention's rowsum(dO o O) equals it
//                              only in exact arithmetic), kept in float32
//   dS = P * (dP - D)          float32 from the stored P and dP, stored
//   dV_h = P^T dO, dK_h = scale * (dS^T Q), dQ = scale * (dS K)
//                              float32 GEMMs, stored per query head
//   dK, dV of a KV head        float32 sum of its query heads' stored dK_h, dV_h, stored
// (the FlashAttention tests' low-precision reference: autograd through a
// bf16/fp16 attention whose K and V are repeated over the GQA group).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensors.h"
#include "core/types.h"
#include "reference/attention_grad.h"

namespace fa {

// Every row's softmax statistics over the stored S and its D over the stored P
// and dP: what a column's gradient needs of all rows. Two float32
// seqlen_q x seqlen_k x d GEMMs per head: the bulk of the cost on long
// sequences, so a caller judging several backwards of a point computes it once.
struct StandardStats {
  // [batch, heads, seqlen_q]: row max and sum of exp(S - m) (l = 0: sees no key), and
  // D = rowsum(P o dP) over the stored P and dP
  std::vector<float> m, l, delta;
};
StandardStats standard_softmax_stats(const AttnProblem&, const HostInputs&, int threads = 0);

// dQ on `rows`, dK and dV on `cols` (sorted, unique, in range: a reference's
// sets), as doubles in SampledGrads' layout. Needs in.q, k, v, dout and the
// statistics (computed here when null); no O: D comes from the stored P and dP,
// so the result does not depend on which forward produced the O a kernel is given.
// Beyond them it costs rows * seqlen_k * d + cols * seqlen_q * d per head.
SampledGrads standard_backward_in_precision(const AttnProblem&, const HostInputs&,
                                            const std::vector<int64_t>& rows,
                                            const std::vector<int64_t>& cols, int threads = 0,
                                            const StandardStats* stats = nullptr);

}  // namespace fa
