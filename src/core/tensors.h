// Host-side tensors: inputs as generated (float32 values already rounded to the
// problem's dtype, or for e4m3 quantized and dequantized, so every back end and
// the reference see the same numbers) and outputs as fetched back (float32).
#pragma once
#include <cstdint>
#include <vector>

namespace fa {

// One e4m3 tensor as a kernel reads it: codes in the float tensor's BSHD layout,
// and descales, the value of code c in group g being decode(c) * descales[g].
// Group of element (b, s, h): b * batch_stride + h * head_stride
// + (block_rows ? s / block_rows : 0). check/fp8_quant.h makes them.
struct E4m3Codes {
  std::vector<uint8_t> codes;
  std::vector<float> descales;
  int64_t batch_stride = 0, head_stride = 0, block_rows = 0;  // all 0: one descale for the tensor
};

struct HostInputs {
  std::vector<float> q;  // [batch, seqlen_q, heads, head_dim]
  std::vector<float> k;  // [batch, seqlen_k, heads_kv, head_dim]
  std::vector<float> v;  // [batch, seqlen_k, heads_kv, head_dim]
  std::vector<float> dout;  // backward only: dO, like O [batch, seqlen_q, heads, head_dim]
  // e4m3 points: what the kernels read, while q, k, v above hold its dequantized
  // values (codes times descales, what the kernels see and the reference uses).
  E4m3Codes q8, k8, v8;
  // e4m3 points: the scale a kernel that writes O in e4m3 writes it with (the
  // codes of O * o_scale; check/fp8_inputs.h chooses it so that O fits). 0: none.
  float o_scale = 0;
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
