// The user's own tensors: Q, K, V read from q.npy, k.npy, v.npy in a folder
// (shape [batch, seqlen, heads, head_dim], float32 or float16, as flash-attention
// lays them out), and O / LSE written back as .npy, so a user can check the
// tool against tensors from their own model.
#pragma once
#include <memory>
#include <string>

#include "core/tensors.h"
#include "core/types.h"

namespace fa {

struct UserInputs {
  HostInputs tensors;  // float32, as read (rounded to a point's dtype when it runs)
  int batch = 0, seqlen_q = 0, seqlen_k = 0, heads = 0, heads_kv = 0, head_dim = 0;
};

// UsageError naming the file and the problem (missing, not 4-D, shapes that
// disagree, heads not divisible by heads_kv).
UserInputs load_user_inputs(const std::string& dir);

// Writes <dir>/<stem>.o.npy [batch, seqlen_q, heads, head_dim] and
// <dir>/<stem>.lse.npy [batch, heads, seqlen_q] (float32), creating dir.
void save_outputs_npy(const std::string& dir, const std::string& stem, const AttnProblem&,
                      const HostOutputs&);

// A file-name-safe form of a problem: "b1_h8-8_q128_k128_d64_bf16_causal".
std::string problem_slug(const AttnProblem&);

}  // namespace fa
