// The FA2 backward's scratch memory (carved from AttnParams::workspace) and the order
// in which the main kernel adds partial dQ into it.
#pragma once
#include <cstdint>

#include "common/attn_params.h"

namespace fa {

// Per (batch, head) row vectors padded to whole 128-row blocks, so the kernels copy
// them in 16-byte chunks without bounds checks (padding: D = 0, LSE*log2e = +inf,
// which makes P = 0 there).
struct Fa2BwdWorkspace {
  float* d = nullptr;         // [batch*heads][m_pad]: D_i = rowsum(dO_i * O_i)
  float* lse_log2 = nullptr;  // [batch*heads][m_pad]: LSE_i * log2(e); +inf where LSE = -inf
  float* dq_accum = nullptr;  // [batch*heads][m_pad][head_dim] float32 partial dQ, per
                              // block in fragment order (DqAccumTile); null if deterministic
  int m_pad = 0;

  static constexpr int kRowAlign = 128;

  static int rows_padded(int seqlen_q) { return (seqlen_q + kRowAlign - 1) / kRowAlign * kRowAlign; }
  static int64_t round_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }
  static int64_t vector_bytes(const AttnParams& p) {
    return round_up(int64_t(p.batch) * p.heads * rows_padded(p.seqlen_q) * 4);
  }
  static int64_t dq_accum_bytes(const AttnParams& p) {
    return p.deterministic ? 0 : vector_bytes(p) * p.head_dim;
  }
  static int64_t bytes(const AttnParams& p) { return 2 * vector_bytes(p) + dq_accum_bytes(p); }

  static Fa2BwdWorkspace carve(const AttnParams& p) {
    Fa2BwdWorkspace w;
    auto* base = static_cast<unsigned char*>(p.workspace);
    w.m_pad = rows_padded(p.seqlen_q);
    w.d = reinterpret_cast<float*>(base);
    w.lse_log2 = reinterpret_cast<float*>(base + vector_bytes(p));
    if (!p.deterministic) w.dq_accum = reinterpret_cast<float*>(base + 2 * vector_bytes(p));
    return w;
  }
};

// One BlockM x HeadDim block of dq_accum. The main kernel's warps compute dQ_i = dS K_j
// on a WarpsM x WarpsD grid of 32-row tiles (per CTA: DCols of the head dim, part `part`
// of DSplit) and add each C fragment as one 16-byte reduction; storing the fragments
// in that order makes a warp's reductions 512 contiguous bytes. The conversion kernel
// reads them back by the same formulas.
template <int BlockM, int HeadDim, int DSplit, int Warps>
struct DqAccumTile {
  static constexpr int kDCols = HeadDim / DSplit;
  static constexpr int kWarpsM = BlockM / 32;
  static constexpr int kWarpsD = Warps / kWarpsM;
  static constexpr int kMTiles = 2;
  static constexpr int kWarpCols = kDCols / kWarpsD;
  static constexpr int kDTiles = kWarpCols / 8;
  static_assert(Warps % kWarpsM == 0, "warps must split the Q block into 32-row tiles");
  static_assert(kWarpCols % 16 == 0, "each warp's dQ columns must be whole ldmatrix.x4 pairs");

  // Float offset of fragment (mt, dt) of `lane` within the block.
  __host__ __device__ static int frag_offset(int part, int warp, int mt, int dt, int lane) {
    return part * BlockM * kDCols + (((warp * kMTiles + mt) * kDTiles + dt) * 32 + lane) * 4;
  }
  __host__ __device__ static int row0(int warp) { return (warp / kWarpsD) * 32; }
  __host__ __device__ static int col0(int part, int warp) {
    return part * kDCols + (warp % kWarpsD) * kWarpCols;
  }
};

}  // namespace fa
