// Host-side tensors: inputs as generated (float32 values already rounded to the
// problem's dtype, so every back end and the reference see the same numbers)
// and outputs as fetched back (float32).
#pragma once
#include <cstdint>
#include <vector>

namespace fa {

struct HostInputs {
  std::vector<float> q;  // [batch, seqlen_q, heads, head_dim]
  std::vector<float> k;  // [batch, seqlen_k, heads_kv, head_dim]
  std::vector<float> v;  // [batch, seqlen_k, heads_kv, head_dim]
  std::vector<float> dout;  // backward only: dO, like O [batch, seqlen_q, heads, head_dim]
};

struct HostOutputs {
  std::vector<float> o;    // [batch, seqlen_q, heads, head_dim]
  std::vector<float> lse;  // [batch, heads, seqlen_q], natural log; -inf for a row that sees no key
};

// What a backward pass writes (float32, like HostOutputs). dK and dV of a KV
// head sum over the query heads that read it.
struct HostGrads {
  std::vector<float> dq;  // like Q [batch, seqlen_q, heads, head_dim]
  std::vector<float> dk;  // like K [batch, seqlen_k, heads_kv, head_dim]
  std::vector<float> dv;  // like V
};

}  // namespace fa
