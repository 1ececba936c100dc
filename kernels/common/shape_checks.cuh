// Which AttnParams the 16-bit tiled kernels (fa1, fa2) accept.
#pragma once
#include <cstdint>

#include "common/attn_params.h"
#include "common/convert.cuh"

namespace fa {

// Shape checks shared by the 16-bit tiled kernels: cp.async and the epilogue move
// 16 bytes at a time, so rows and pointers must be 16-byte aligned.
inline const char* tiled_kernel_unsupported(const AttnParams& p, ElemType dtype, int head_dim) {
  if (p.dtype != dtype) return "dtype not built for this variant";
  if (p.head_dim != head_dim) return "head_dim not built for this variant";
  auto misaligned = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) != 0; };
  if (misaligned(p.q) || misaligned(p.k) || misaligned(p.v) || misaligned(p.o))
    return "tensors must be 16-byte aligned";
  if (p.q_row_stride % 8 || p.k_row_stride % 8 || p.v_row_stride % 8 || p.o_row_stride % 8 ||
      p.q_head_stride % 8 || p.k_head_stride % 8 || p.v_head_stride % 8 || p.o_head_stride % 8 ||
      p.q_batch_stride % 8 || p.k_batch_stride % 8 || p.v_batch_stride % 8 || p.o_batch_stride % 8)
    return "strides must be multiples of 8 elements";
  return nullptr;
}

// The backward's gradient tensors, under the same rule: dO is read like O, and
// dQ, dK, dV are written in pairs or wider.
inline const char* gradients_unsupported(const AttnParams& p) {
  auto misaligned = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) != 0; };
  if (misaligned(p.dout) || misaligned(p.dq) || misaligned(p.dk) || misaligned(p.dv))
    return "gradient tensors must be 16-byte aligned";
  if (p.do_row_stride % 8 || p.dq_row_stride % 8 || p.dk_row_stride % 8 || p.dv_row_stride % 8 ||
      p.do_head_stride % 8 || p.dq_head_stride % 8 || p.dk_head_stride % 8 || p.dv_head_stride % 8 ||
      p.do_batch_stride % 8 || p.dq_batch_stride % 8 || p.dk_batch_stride % 8 || p.dv_batch_stride % 8)
    return "gradient strides must be multiples of 8 elements";
  return nullptr;
}

template <typename Elem>
constexpr ElemType elem_type_of() {
  return ElemTraits<Elem>::is_bf16 ? ElemType::bf16 : ElemType::f16;
}

}  // namespace fa
