// Where the host tool's problem (core/types.h) meets the kernels' boundary
// struct (attn_params.h): the dtype names on each side, and the AttnParams of a
// problem stored as contiguous BSHD tensors. Host-only.
#pragma once
#include "common/attn_params.h"
#include "core/types.h"

namespace fa {

inline ElemType elem_type(DType d) {
  switch (d) {
    case DType::f16: return ElemType::f16;
    case DType::bf16: return ElemType::bf16;
    case DType::f32: return ElemType::f32;
    case DType::e4m3: return ElemType::e4m3;
  }
  return ElemType::f32;
}

inline DType dtype_of(ElemType t) {  // the inverse of elem_type
  switch (t) {
    case ElemType::f16: return DType::f16;
    case ElemType::bf16: return DType::bf16;
    case ElemType::f32: return DType::f32;
    case ElemType::e4m3: return DType::e4m3;
  }
  return DType::f32;
}

// AttnParams for a problem with contiguous BSHD buffers (pointers left null).
inline AttnParams make_params(const AttnProblem& p, ElemType storage) {
  AttnParams a;
  a.batch = p.batch;
  a.heads = p.heads;
  a.heads_kv = p.heads_kv;
  a.seqlen_q = p.seqlen_q;
  a.seqlen_k = p.seqlen_k;
  a.head_dim = p.head_dim;
  a.softmax_scale = p.scale();
  a.softmax_scale_log2 = p.scale() * 1.4426950408889634f;
  a.causal = p.causal;
  a.dtype = storage;
  a.o_dtype = elem_type(output_dtype(p.dtype));
  set_contiguous_strides(a);
  return a;
}

}  // namespace fa
