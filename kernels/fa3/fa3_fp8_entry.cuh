// fa3's FP8 (e4m3) forward as the registry sees it: AttnParams (e4m3 codes,
// their descales, V^T in the workspace) to Fp8FwdParams, and one launch
// sequence: the attention kernel that transposes V itself where
// fp8_vt_in_kernel says (short queries); else, on tiles with three consumer
// warpgroups up to kFp8VtSharedMaxSeqlenQ, a memset of the words by which the
// kernel's producer warps share the V^T they make, and the attention kernel;
// else the V^T pre-pass and the attention kernel; so that a row's timing
// includes making V^T. One instance
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
  // Past fp8_vt_in_kernel's lengths and up to kFp8VtSharedMaxSeqlenQ, tiles
  // with three consumer warpgroups make V^T with their producer warps, shared by
  // the launch, instead of the pre-pass (fa3_fp8_kernel.cuh, vt_team).
  static constexpr bool kSharesVt = fp8_tile_can_share_vt(BlockM, false);
  using TraitsSharedVt =
      std::conditional_t<kSharesVt,
                         Fa3Fp8Traits<HeadDim, BlockM, BlockN, Stages, fp8_default_poly_every(HeadDim), false, true>,
                         Traits>;
  static bool vt_in_kernel(const AttnParams& p) { return fp8_vt_in_kernel(HeadDim, p.causal, p.seqlen_q); }
  static bool vt_shared(const AttnParams& p) {
    return kSharesVt && !vt_in_kernel(p) && p.seqlen_q <= kFp8VtSharedMaxSeqlenQ;
  }
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

  // V^T: [batch, heads_kv, head_dim, seqlen_k rounded up to 64]; where the
  // producer warps make it, their words (fa3_fp8_vt_tasks.h); then (from a
  // 256-byte boundary) the split tail's workspace, which never runs with the
  // in-kernel transpose: the pre-pass, or the memset of the words, zeroes its
  // counts (fa3_fp8_fwd.cuh), which is why it follows the words directly.
  static int64_t vt_bytes_padded(const Fp8FwdParams& f) { return (fp8_vt_bytes(f) + 255) / 256 * 256; }
  static int64_t vt_sync_bytes(const AttnParams& p, const Fp8FwdParams& f) {
    return vt_shared(p) ? fp8_vt_sync_bytes(f, BlockN) : 0;
  }
  static int64_t workspace_bytes(const AttnParams& p) {
    if (vt_in_kernel(p)) return 0;
    const Fp8FwdParams f = fp8_params(p);
    return vt_bytes_padded(f) + vt_sync_bytes(p, f) + fp8_split_bytes(f, BlockM, BlockN);
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
    const bool shared = vt_shared(p);
    const int64_t before_split = vt_bytes_padded(f) + vt_sync_bytes(p, f);
    if (shared) f.vt_sync = f.vt + vt_bytes_padded(f);
    if (!in_kernel && needed > before_split) f.split_ws = f.vt + before_split;
    // In the kernel; the producer warps' V^T (the words zeroed first); or the V^T pre-pass; then attention.
    cudaError_t err;
    if (in_kernel) err = fa3_fp8_fwd_tile<TraitsVtInKernel>(f, stream);
    else if (shared) err = fa3_fp8_fwd_tile<TraitsSharedVt>(f, stream);
    else err = fa3_fp8_fwd_tile<Traits>(f, stream);
    if (Fault != Fa3Fp8Fault::v_descale_twice || err != cudaSuccess) return int(err);
    fa3::fp8_fault_scale_o<<<dim3(p.seqlen_q, p.heads, p.batch), 128, 0, stream>>>(
        static_cast<__nv_bfloat16*>(p.o), f.v_descale, p.seqlen_q, p.heads, p.kv_group(), p.head_dim,
        p.o_batch_stride, p.o_row_stride, p.o_head_stride);
    return int(cudaGetLastError());
  }
};

}  // namespace fa
