// Standard (unfused) attention backward: every N^2 intermediate goes through HBM,
// as an unfused framework implementation (bf16/fp16 autograd through matmul and
// softmax) computes it. The forward's P is not kept between two launches, so it
// is recomputed from the saved LSE:
//   S  = scale * Q K^T          cuBLAS batched GEMM -> S in the dtype
//   P  = exp(S - LSE), masked   one kernel, in place of S (P in the dtype)
//   dV = P^T dO                 cuBLAS
//   dP = dO V^T                 cuBLAS -> dP in the dtype
//   D  = rowsum(P o dP)         one kernel per row (a framework's softmax
//   dS = P o (dP - D)           backward), which writes dS in place of dP (dtype)
//   dQ = scale * dS K           cuBLAS
//   dK = scale * dS^T Q         cuBLAS
// S, P, dP and dS are stored in the dtype and every GEMM accumulates in float32,
// as a bf16/fp16 framework does. Causal masking (bottom-right) happens in the P
// kernel (masked P = 0, so dS = 0 there too); a row whose LSE is -inf (it sees
// no key) has P = 0 and gradient 0.
//
// GQA/MQA: dK and dV of a KV head sum the GEMMs of its G = heads / heads_kv
// query heads. With G = 1 the two GEMMs write dK and dV directly; with G > 1
// they run G times (one batched call per member of the group, over every
// (batch, KV head)) into float32 accumulators, the first with beta = 0 and the
// others with beta = 1, and one kernel converts the sums to the dtype.
//
// Extra memory (p.workspace, bytes): round_up(8 * (7 * B*H + 2 * B*H_kv), 256)
// for cuBLAS's pointer arrays, + 2 * round_up(2 * B*H*N_q*N_k, 256) for S/P and
// dP/dS (16-bit), + (G > 1 ? 2 * 4 * B*H_kv*N_k*d : 0) for the dK/dV
// accumulators. S and P share one N^2 buffer and dP and dS the other, each
// written over the one before it (an eager framework's autograd holds three at
// its peak: P, dP and dS). The two make long sequences fail with status `oom` as
// the forward's S and P do, at the same size.
//
// HBM traffic per (batch, query head), s = dtype bytes, GEMMs counted as ideal
// (each operand read once), G = 1:
//   read  = s*(4*N_q*d + 3*N_k*d) + 4*N_q + 8*s*N_q*N_k
//           (Q, K: S GEMM; LSE, S: P kernel; P, dO: dV; V, dO: dP; P, dP twice:
//            dS kernel, once for D and once for dS; dS, K: dQ; dS, Q: dK)
//   write = s*(N_q*d + 2*N_k*d) + 4*s*N_q*N_k        (dQ, dK, dV; S, P, dP, dS)
// With G > 1, per KV head, dK and dV each write 4*N_k*d G times and read it G - 1
// times (beta = 1), then the conversion reads 4*N_k*d and writes s*N_k*d, in
// place of the s*N_k*d write. Causal does not shrink any N^2 term.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/attn_params.h"
#include "common/shape_checks.cuh"

namespace fa {

// Defined in standard_bwd.cu (non-templated: one copy of the cuBLAS glue).
int64_t standard_bwd_workspace_bytes(const AttnParams& p);
const char* standard_bwd_unsupported(const AttnParams& p, ElemType dtype);
int standard_bwd_launch(const AttnParams& p, cudaStream_t stream);

template <typename Elem, int HeadDim, int BlockM, int BlockN, int Warps, int Stages>
struct StandardBwdKernel {
  static int64_t workspace_bytes(const AttnParams& p) { return standard_bwd_workspace_bytes(p); }
  static const char* unsupported(const AttnParams& p) {
    return standard_bwd_unsupported(p, elem_type_of<Elem>());
  }
  static int launch(const AttnParams& p, cudaStream_t stream) {
    return standard_bwd_launch(p, stream);
  }
};

}  // namespace fa
