// The plain struct at the host/device boundary: everything a forward attention
// kernel needs, and nothing of the host tool (no JSON, no registry, no std::).
//
// Layout is flash-attention's: Q [batch, seqlen_q, heads, head_dim],
// K/V [batch, seqlen_k, heads_kv, head_dim], O like Q, all with head_dim
// contiguous (stride 1). LSE is float32 [batch, heads, seqlen_q], natural log.
// Strides are in elements, so a kernel can take views of larger tensors.
//
// An e4m3 forward (dtype e4m3) reads Q, K, V as e4m3 codes with descales
// (the fields at the end) and writes O in o_dtype (bf16, or e4m3 codes scaled
// by o_scale); strides stay in elements.
//
// The backward pass uses the same struct: Q, K, V, O and LSE are its inputs (O
// and LSE as a forward left them), with dO (like O); it writes dQ (like Q) and
// dK, dV (like K and V: a KV head's gradient sums over its query heads).
#pragma once
#include <cstdint>

namespace fa {

enum class ElemType : int { f32 = 0, f16 = 1, bf16 = 2, e4m3 = 3 };

// Descale factors of one e4m3 tensor, in device memory: code c of (batch b,
// head h, sequence row s) stands for decode(c) * ptr[b * batch_stride +
// h * head_stride + (block_rows ? s / block_rows : 0)]. All three 0: one
// descale for the tensor. K and V are indexed by their own (kv) head.
struct DescaleView {
  const float* ptr = nullptr;
  int64_t batch_stride = 0, head_stride = 0, block_rows = 0;
};

struct AttnParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // [batch, heads, seqlen_q]

  int batch = 0, heads = 0, heads_kv = 0;
  int seqlen_q = 0, seqlen_k = 0, head_dim = 0;

  // Element strides for Q/O and K/V (batch, row, head); head_dim stride is 1.
  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;

  float softmax_scale = 0.f;       // applied to Q K^T
  float softmax_scale_log2 = 0.f;  // softmax_scale * log2(e): exp2 with the scale folded in
  bool causal = false;             // bottom-right aligned, see docs/MEASUREMENT.md
  ElemType dtype = ElemType::bf16;

  int num_sms = 0;                 // for persistent grids; 0 = ask the device
  void* workspace = nullptr;       // kernel-owned scratch (fa1's m and l, standard's S/P)
  int64_t workspace_bytes = 0;

  // Backward pass only (null in a forward launch). Last in the struct, so the
  // forward kernels' parameter offsets (and their SASS) are those of before.
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  int64_t do_batch_stride = 0, do_row_stride = 0, do_head_stride = 0;
  int64_t dq_batch_stride = 0, dq_row_stride = 0, dq_head_stride = 0;
  int64_t dk_batch_stride = 0, dk_row_stride = 0, dk_head_stride = 0;
  int64_t dv_batch_stride = 0, dv_row_stride = 0, dv_head_stride = 0;
  // dQ accumulated in a fixed order, so two runs give identical bits (a kernel
  // whose fast path adds partial dQ with atomics offers this at some cost).
  bool deterministic = false;

  // e4m3 forward only (dtype e4m3: Q, K, V hold one-byte codes). Last in the
  // struct for the reason the backward's fields are: the 16-bit forwards'
  // parameter offsets stay as they were.
  DescaleView q_descale, k_descale, v_descale;
  ElemType o_dtype = ElemType::bf16;  // what an e4m3 forward writes O in
  // o_dtype e4m3: O is written as the codes of O * *o_scale (one float in
  // device memory, chosen by the caller so that |O| * scale stays below 448),
  // and read back as code value / *o_scale.
  const float* o_scale = nullptr;

  // For head h of Q the K/V head is h / (heads / heads_kv) (GQA / MQA).
  int kv_group() const { return heads / heads_kv; }
};

// What a forward instantiation K of input dtype `in` writes O in: K::kODtype
// where K declares one (cuDNN's e4m3 forward writes e4m3), else the input
// dtype, and bf16 for e4m3 inputs (the host's output_dtype rule, core/types.h).
template <typename K>
constexpr ElemType o_dtype_of(ElemType in) {
  if constexpr (requires { K::kODtype; })
    return K::kODtype;
  else
    return in == ElemType::e4m3 ? ElemType::bf16 : in;
}

// Copy the extents and the Q, K, V, O strides into a kernel's own parameter
// struct that names them as AttnParams does (the FP8 forwards' Fp8FwdParams and
// cudnn_sdpa_fp8::Fp8Params).
template <typename P>
void copy_extents_and_strides(const AttnParams& p, P& f) {
  f.batch = p.batch, f.heads = p.heads, f.heads_kv = p.heads_kv;
  f.seqlen_q = p.seqlen_q, f.seqlen_k = p.seqlen_k, f.head_dim = p.head_dim;
  f.q_batch_stride = p.q_batch_stride, f.q_row_stride = p.q_row_stride, f.q_head_stride = p.q_head_stride;
  f.k_batch_stride = p.k_batch_stride, f.k_row_stride = p.k_row_stride, f.k_head_stride = p.k_head_stride;
  f.v_batch_stride = p.v_batch_stride, f.v_row_stride = p.v_row_stride, f.v_head_stride = p.v_head_stride;
  f.o_batch_stride = p.o_batch_stride, f.o_row_stride = p.o_row_stride, f.o_head_stride = p.o_head_stride;
}

// Fill the strides for contiguous BSHD tensors.
inline void set_contiguous_strides(AttnParams& p) {
  p.q_head_stride = p.head_dim;
  p.q_row_stride = int64_t(p.heads) * p.head_dim;
  p.q_batch_stride = p.q_row_stride * p.seqlen_q;
  p.o_head_stride = p.q_head_stride;
  p.o_row_stride = p.q_row_stride;
  p.o_batch_stride = p.q_batch_stride;
  p.k_head_stride = p.head_dim;
  p.k_row_stride = int64_t(p.heads_kv) * p.head_dim;
  p.k_batch_stride = p.k_row_stride * p.seqlen_k;
  p.v_head_stride = p.k_head_stride;
  p.v_row_stride = p.k_row_stride;
  p.v_batch_stride = p.k_batch_stride;
  // Gradients share their tensor's layout.
  p.do_head_stride = p.o_head_stride;
  p.do_row_stride = p.o_row_stride;
  p.do_batch_stride = p.o_batch_stride;
  p.dq_head_stride = p.q_head_stride;
  p.dq_row_stride = p.q_row_stride;
  p.dq_batch_stride = p.q_batch_stride;
  p.dk_head_stride = p.k_head_stride;
  p.dk_row_stride = p.k_row_stride;
  p.dk_batch_stride = p.k_batch_stride;
  p.dv_head_stride = p.v_head_stride;
  p.dv_row_stride = p.v_row_stride;
  p.dv_batch_stride = p.v_batch_stride;
}

}  // namespace fa
