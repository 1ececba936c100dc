// fa3's FP8 (e4m3) forward as the registry sees it: AttnParams (e4m3 codes,
// their descales, V^T in the workspace) to Fp8FwdParams, and one launch
// sequence: the attention kernel that transposes V itself where
// fp8_vt_in_kernel says (short queries), else the V^T pre-pass and the
// attention kernel, so that a row's timing includes the pre-pass. One instance
// per registered tile (instances.cmake); the exponentials as
// fp8_default_poly_every says for the head_dim.
#pragma once
#include <climits>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "common/attn_params.h"
#include "fa3/fa3_fp8_fault.h"
#include "fa3/fa3_fp8_fwd.cuh"

namespace fa {

namespace fa3 {
// The planted v_descale_twice: O[b, s, h, :] *= V's descale of (b, h's kv head).
// A template so that every instance's translation unit may define it (inline).
template <typename Out>
__global__ void fp8_fault_scale_o(Out* o, Fp8Descale v_descale, int seqlen_q, int heads, int group,
                                  int head_dim, int64_t o_batch_stride, int64_t o_row_stride, int64_t o_head_stride) {
  const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const float d = v_descale.at(b, h / group);
  Out* row = o + b * o_batch_stride + int64_t(s) * o_row_stride + h * o_head_stride;
  for (int c = threadIdx.x; c < head_dim; c += blockDim.x) row[c] = __float2bfloat16_rn(__bfloat162float(row[c]) * d);
}
}  // namespace fa3

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages,
          Fa3Fp8Fault Fault = Fa3Fp8Fault::none>
struct Fa3Fp8Kernel {
  using Traits = Fa3Fp8Traits<HeadDim, BlockM, BlockN, Stages, fp8_default_poly_every(HeadDim)>;
  using TraitsVtInKernel = Fa3Fp8Traits<HeadDim, BlockM, BlockN, Stages, fp8_default_poly_every(HeadDim), true>;
  static bool vt_in_kernel(const AttnParams& p) { return fp8_vt_in_kernel(HeadDim, p.causal, p.seqlen_q); }
  static_assert(std::is_same_v<Elem, uint8_t>, "fa3 fp8: e4m3 inputs are one-byte codes");
  static_assert(Warps * 32 == Traits::kThreads, "fa3 fp8: warps must be 4 * (block_m / 64 + 1)");

  static fa3::Fp8Descale descale(const DescaleView& d) { return fa3::Fp8Descale{d.ptr, d.batch_stride, d.head_stride}; }
  static int block_rows(const DescaleView& d) { return d.block_rows > INT_MAX ? -1 : int(d.block_rows); }

  static Fp8FwdParams fp8_params(const AttnParams& p) {
    Fp8FwdParams f;
    f.q = static_cast<const uint8_t*>(p.q);
    f.k = static_cast<const uint8_t*>(p.k);
    f.v = static_cast<const uint8_t*>(p.v);
    f.o = p.o;
    f.lse = p.lse;
    f.vt = static_cast<uint8_t*>(p.workspace);
    copy_extents_and_strides(p, f);
    f.q_descale = descale(p.q_descale);
    f.k_descale = descale(p.k_descale);
    f.v_descale = descale(p.v_descale);
    f.q_block_rows = block_rows(p.q_descale), f.k_block_rows = block_rows(p.k_descale);
    f.v_block_rows = block_rows(p.v_descale);
    f.softmax_scale = p.softmax_scale;
    f.causal = p.causal;
    f.num_sms = p.num_sms;
    return f;
  }

  // V^T for the pre-pass: [batch, heads_kv, head_dim, seqlen_k rounded up to 64],
  // then (from a 256-byte boundary) the split tail's workspace, which only runs
  // with the pre-pass: the pre-pass zeroes its counts (fa3_fp8_fwd.cuh).
  static int64_t vt_bytes_padded(const Fp8FwdParams& f) { return (fp8_vt_bytes(f) + 255) / 256 * 256; }
  static int64_t workspace_bytes(const AttnParams& p) {
    if (vt_in_kernel(p)) return 0;
    const Fp8FwdParams f = fp8_params(p);
    return vt_bytes_padded(f) + fp8_split_bytes(f, BlockM, BlockN);
  }

  // Asked before buffers exist (the registry's refusal has null pointers and no
  // workspace): those are checked at launch, the rest here.
  static const char* unsupported(const AttnParams& p) {
    if (p.dtype != ElemType::e4m3) return "fa3 fp8: instance built for e4m3 inputs";
    if (p.head_dim != HeadDim) return "fa3 fp8: instance built for another head_dim";
    if (p.o_dtype != ElemType::bf16) return "fa3 fp8: writes O in bf16 only";
    Fp8FwdParams f = fp8_params(p);
    // Stand-ins for what exists only at launch: aligned, never dereferenced here.
    static const float placeholder[1] = {1.f};
    alignas(16) static uint8_t vt_placeholder[16];
    if (!f.q_descale.ptr) f.q_descale.ptr = placeholder;
    if (!f.k_descale.ptr) f.k_descale.ptr = placeholder;
    if (!f.v_descale.ptr) f.v_descale.ptr = placeholder;
    if (!f.vt) f.vt = vt_placeholder;
    return fa3_fp8_unsupported(f, BlockN);
  }

  static int launch(const AttnParams& p, cudaStream_t stream) {
    Fp8FwdParams f = fp8_params(p);
    const bool in_kernel = vt_in_kernel(p);
    const int64_t needed = workspace_bytes(p);
    if (!f.q_descale.ptr || !f.k_descale.ptr || !f.v_descale.ptr ||
        (!in_kernel && (!f.vt || p.workspace_bytes < needed)) || unsupported(p))
      return int(cudaErrorInvalidValue);
    if (!in_kernel && needed > vt_bytes_padded(f)) f.split_ws = f.vt + vt_bytes_padded(f);
    const cudaError_t err = in_kernel ? fa3_fp8_fwd_tile<TraitsVtInKernel>(f, stream)
                                      : fa3_fp8_fwd_tile<Traits>(f, stream);  // the V^T pre-pass, then attention
    if (Fault != Fa3Fp8Fault::v_descale_twice || err != cudaSuccess) return int(err);
    fa3::fp8_fault_scale_o<<<dim3(p.seqlen_q, p.heads, p.batch), 128, 0, stream>>>(
        static_cast<__nv_bfloat16*>(p.o), f.v_descale, p.seqlen_q, p.heads, p.kv_group(), p.head_dim,
        p.o_batch_stride, p.o_row_stride, p.o_head_stride);
    return int(cudaGetLastError());
  }
};

}  // namespace fa
