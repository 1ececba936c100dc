// Which AttnParams the 16-bit tiled kernels (fa1, fa2; forward and backward) accept.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "common/attn_params.h"
#include "common/convert.cuh"

namespace fa {

// cp.async and the epilogues move 16 bytes at a time, so the 16-bit tiled kernels
// need 16-byte aligned tensors whose strides are multiples of 8 elements.
inline bool any_misaligned_16(std::initializer_list<const void*> ptrs) {
  for (const void* ptr : ptrs)
    if (reinterpret_cast<uintptr_t>(ptr) & 15) return true;
  return false;
}
inline bool any_stride_off_8(std::initializer_list<int64_t> strides) {
  for (int64_t s : strides)
    if (s % 8) return true;
  return false;
}

inline const char* tiled_kernel_unsupported(const AttnParams& p, ElemType dtype, int head_dim) {
  if (p.dtype != dtype) return "dtype not built for this variant";
  if (p.head_dim != head_dim) return "head_dim not built for this variant";
  if (any_misaligned_16({p.q, p.k, p.v, p.o})) return "tensors must be 16-byte aligned";
  if (any_stride_off_8({p.q_row_stride, p.k_row_stride, p.v_row_stride, p.o_row_stride,
                        p.q_head_stride, p.k_head_stride, p.v_head_stride, p.o_head_stride,
                        p.q_batch_stride, p.k_batch_stride, p.v_batch_stride, p.o_batch_stride}))
    return "strides must be multiples of 8 elements";
  return nullptr;
}

// The backward's gradient tensors, under the same rule: dO is read like O, and
// dQ, dK, dV are written in pairs or wider.
inline const char* gradients_unsupported(const AttnParams& p) {
  if (any_misaligned_16({p.dout, p.dq, p.dk, p.dv})) return "gradient tensors must be 16-byte aligned";
  if (any_stride_off_8({p.do_row_stride, p.dq_row_stride, p.dk_row_stride, p.dv_row_stride,
                        p.do_head_stride, p.dq_head_stride, p.dk_head_stride, p.dv_head_stride,
                        p.do_batch_stride, p.dq_batch_stride, p.dk_batch_stride, p.dv_batch_stride}))
    return "gradient strides must be multiples of 8 elements";
  return nullptr;
}

template <typename Elem>
constexpr ElemType elem_type_of() {
  return ElemTraits<Elem>::is_bf16 ? ElemType::bf16 : ElemType::f16;
}

// The whole rule for a tiled backward: the forward's, the gradients', and every
// query head mapping to a K/V head.
inline const char* tiled_backward_unsupported(const AttnParams& p, ElemType dtype, int head_dim) {
  if (const char* why = tiled_kernel_unsupported(p, dtype, head_dim)) return why;
  if (p.heads_kv <= 0 || p.heads % p.heads_kv != 0) return "heads must be a multiple of heads_kv";
  if (p.seqlen_q <= 0 || p.seqlen_k <= 0) return "seqlen_q and seqlen_k must be positive";
  return gradients_unsupported(p);
}

}  // namespace fa
