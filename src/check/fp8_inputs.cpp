#include "check/fp8_inputs.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "check/hadamard.h"
#include "core/e4m3.h"

namespace fa {

E4m3Codes e4m3_codes(const Fp8Tensor& t) {
  E4m3Codes c;
  c.codes = t.codes;
  c.descales = t.descales;
  switch (t.scaling) {
    case Fp8Scaling::tensor: break;
    case Fp8Scaling::head:
      c.batch_stride = t.shape.heads;
      c.head_stride = 1;
      break;
    case Fp8Scaling::block: {
      const int64_t blocks = (t.shape.seqlen + t.block_rows - 1) / t.block_rows;
      c.head_stride = blocks;
      c.batch_stride = t.shape.heads * blocks;
      c.block_rows = t.block_rows;
      break;
    }
  }
  return c;
}

float e4m3_o_scale(const std::vector<float>& v) {
  float amax = 0.f;
  for (float x : v) amax = std::max(amax, std::fabs(x));
  return amax > 0.f ? kE4m3Max / (kE4m3OHeadroom * amax) : 1.f;
}

HostInputs quantize_inputs(const AttnProblem& p, HostInputs& in, const Fp8Settings& s, uint64_t seed) {
  HostInputs original = in;
  if (s.fp8_hadamard) {
    const RandomizedHadamard h(p.head_dim, seed);
    h.apply_rows(in.q);
    h.apply_rows(in.k);
  }
  const BshdShape qs{p.batch, p.seqlen_q, p.heads, p.head_dim};
  const BshdShape ks{p.batch, p.seqlen_k, p.heads_kv, p.head_dim};
  const int64_t rows = s.fp8_scaling == Fp8Scaling::block ? kFp8BlockRows : 0;
  const Fp8Tensor q = quantize_e4m3(in.q, qs, s.fp8_scaling, rows);
  const Fp8Tensor k = quantize_e4m3(in.k, ks, s.fp8_scaling, rows);
  const Fp8Tensor v = quantize_e4m3(in.v, ks, s.fp8_scaling, rows);
  in.q = dequantize(q);
  in.k = dequantize(k);
  in.v = dequantize(v);
  in.q8 = e4m3_codes(q);
  in.k8 = e4m3_codes(k);
  in.v8 = e4m3_codes(v);
  in.o_scale = e4m3_o_scale(in.v);
  return original;
}

}  // namespace fa
