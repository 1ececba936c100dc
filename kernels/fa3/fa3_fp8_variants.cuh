// fp8_check's run-time choice among FP8 forward tiles (fa3_fp8_fwd.cuh): every
// variant at every head dim is compiled here, so only the standalone programs
// (tests/gpu/standalone/fp8_check.cu, fp8_accum_probe.cu) include this; the
// registry's instances compile their own tile alone.
#pragma once
#include "fa3/fa3_fp8_fwd.cuh"

namespace fa {

// Variants for fp8_check, each a compile-time instantiation chosen at run time
// so that one process can time them side by side (fp8_check --time --variant).
// docs/PERF_NOTES.md (fa3-fp8-tiles, fa3-fp8-exp2-on-fma,
// fa3-fp8-three-warpgroups, fa3-fp8-hd128-block-shapes) has them and the
// candidates dropped measured.
//   base   the default tile per head_dim (fa3_fp8_fwd.cuh)
//   two    hd128: 128 x 128, two consumer warpgroups (the default before 192 x 128)
//   wide   hd128: 128 x 192, two consumer warpgroups (V^T in 64-byte panels)
//   poly4  base's tile with a quarter of the exponentials on the FMA pipe
//          (every 4th 8-column group: exp2_poly), the rest on MUFU
//   poly2  base's tile with half of them on the FMA pipe
//   tv     base's tile with V transposed in the kernel (no pre-pass)
//   split  base's kernel given a split workspace: the non-causal tail split
//          (fa3_fp8_fwd.cuh, fp8_split_plan); the caller passes Fp8FwdParams::split_ws
//   vs     split, with V^T made by the kernel's producer warps and shared between
//          its blocks instead of the pre-pass (fa3_fp8_kernel.cuh vt_team) where
//          the tile has three consumer warpgroups (hd128, as the registry past
//          the in-kernel lengths; other head dims run split); the caller passes
//          Fp8FwdParams::vt_sync, split_ws right behind it
//   vm1, vm2, vm4  vs's shared V^T made by a kernel of its own on 1, 2 or 4 SMs
//          (fa3_fp8_vt_maker.cuh) launched before the attention
//          kernel, which runs at once on the other SMs; workspaces as vs
// Where a variant names only hd128, the other head dims run base.
enum class Fp8Variant { base, two, wide, poly4, poly2, tv, split, vs, vm1, vm2, vm4 };
inline constexpr Fp8Variant kFp8Variants[] = {Fp8Variant::base,  Fp8Variant::two, Fp8Variant::wide, Fp8Variant::poly4,
                                              Fp8Variant::poly2, Fp8Variant::tv,  Fp8Variant::split,
                                              Fp8Variant::vs,    Fp8Variant::vm1, Fp8Variant::vm2,
                                              Fp8Variant::vm4};

inline const char* fp8_variant_name(Fp8Variant v) {
  switch (v) {
    case Fp8Variant::base: return "base";
    case Fp8Variant::two: return "two";
    case Fp8Variant::wide: return "wide";
    case Fp8Variant::poly4: return "poly4";
    case Fp8Variant::poly2: return "poly2";
    case Fp8Variant::tv: return "tv";
    case Fp8Variant::split: return "split";
    case Fp8Variant::vs: return "vs";
    case Fp8Variant::vm1: return "vm1";
    case Fp8Variant::vm2: return "vm2";
    case Fp8Variant::vm4: return "vm4";
  }
  return "?";
}

// block_m x block_n of variant v's tile at head_dim, and its exponentials.
constexpr int fp8_variant_block_m(Fp8Variant v, int head_dim) {
  return head_dim == 128 && (v == Fp8Variant::two || v == Fp8Variant::wide) ? 128 : fp8_default_block_m(head_dim);
}
constexpr int fp8_variant_block_n(Fp8Variant v, int head_dim) {
  return head_dim == 128 && v == Fp8Variant::wide ? 192 : fp8_default_block_n(head_dim);
}
constexpr int fp8_variant_poly_every(Fp8Variant v, int head_dim) {
  return v == Fp8Variant::poly4 ? 4 : v == Fp8Variant::poly2 ? 2 : fp8_default_poly_every(head_dim);
}
// Whether variant v's kernel transposes V itself (no pre-pass).
constexpr bool fp8_variant_transposes_v(Fp8Variant v) { return v == Fp8Variant::tv; }
// SMs given to the V^T maker kernel beside the attention kernel (vm*), or 0.
constexpr int fp8_variant_maker_blocks(Fp8Variant v) {
  return v == Fp8Variant::vm1 ? 1 : v == Fp8Variant::vm2 ? 2 : v == Fp8Variant::vm4 ? 4 : 0;
}
// Whether variant v runs with a split workspace.
constexpr bool fp8_variant_splits(Fp8Variant v) {
  return v == Fp8Variant::split || v == Fp8Variant::vs || fp8_variant_maker_blocks(v) > 0;
}
// Whether variant v makes V^T during the attention kernel, shared between its
// blocks (no pre-pass): its producer warps (vs) or a maker kernel beside it (vm*).
constexpr bool fp8_variant_shares_vt(Fp8Variant v) { return v == Fp8Variant::vs || fp8_variant_maker_blocks(v) > 0; }

// Whether variant v's tile at head_dim makes V^T in the kernel (where its tile
// may: fp8_tile_can_share_vt; elsewhere vs runs the pre-pass).
constexpr bool fp8_variant_shares_vt_at(Fp8Variant v, int head_dim) {
  return fp8_variant_shares_vt(v) &&
         fp8_tile_can_share_vt(fp8_variant_block_m(v, head_dim), fp8_variant_transposes_v(v));
}

template <Fp8Variant V, int HeadDim>
using Fa3Fp8TraitsOf = Fa3Fp8Traits<HeadDim, fp8_variant_block_m(V, HeadDim), fp8_variant_block_n(V, HeadDim), 2,
                                    fp8_variant_poly_every(V, HeadDim), fp8_variant_transposes_v(V),
                                    fp8_variant_shares_vt_at(V, HeadDim), fp8_variant_maker_blocks(V) == 0>;

// p as variant v runs it: with a maker kernel (vm*, where the tile shares V^T),
// the attention kernel's grid leaves the maker's SMs out, and the split plan
// follows that grid.
inline Fp8FwdParams fp8_variant_params(Fp8FwdParams p, Fp8Variant v) {
  const int makers = fp8_variant_shares_vt_at(v, p.head_dim) ? fp8_variant_maker_blocks(v) : 0;
  if (makers > 0) {
    p.num_sms = fp8_grid_sms(p) - makers;
    p.vt_maker_blocks = makers;
  }
  return p;
}

// Why p cannot run on variant v's tile, or nullptr.
inline const char* fa3_fp8_unsupported(const Fp8FwdParams& p, Fp8Variant v = Fp8Variant::base) {
  return fa3_fp8_unsupported(p, fp8_variant_block_n(v, p.head_dim));
}

// Variant V's tile at p.head_dim: the attention kernel alone, or (Whole) the
// whole forward of fa3_fp8_fwd_tile, whose V^T step (pre-pass, the zeroing of
// vs's words, or none) is the registry's.
template <Fp8Variant V, bool Whole>
cudaError_t fa3_fp8_variant_at(const Fp8FwdParams& p, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: return Whole ? fa3_fp8_fwd_tile<Fa3Fp8TraitsOf<V, 64>>(p, stream)
                          : fa3_fp8_attention_tile<Fa3Fp8TraitsOf<V, 64>>(p, stream);
    case 128: return Whole ? fa3_fp8_fwd_tile<Fa3Fp8TraitsOf<V, 128>>(p, stream)
                           : fa3_fp8_attention_tile<Fa3Fp8TraitsOf<V, 128>>(p, stream);
    case 256: return Whole ? fa3_fp8_fwd_tile<Fa3Fp8TraitsOf<V, 256>>(p, stream)
                           : fa3_fp8_attention_tile<Fa3Fp8TraitsOf<V, 256>>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

template <bool Whole>
cudaError_t fa3_fp8_variant(const Fp8FwdParams& p_in, Fp8Variant v, cudaStream_t stream) {
  const Fp8FwdParams p = fp8_variant_params(p_in, v);
  switch (v) {
    case Fp8Variant::base: return fa3_fp8_variant_at<Fp8Variant::base, Whole>(p, stream);
    case Fp8Variant::two: return fa3_fp8_variant_at<Fp8Variant::two, Whole>(p, stream);
    case Fp8Variant::wide: return fa3_fp8_variant_at<Fp8Variant::wide, Whole>(p, stream);
    case Fp8Variant::poly4: return fa3_fp8_variant_at<Fp8Variant::poly4, Whole>(p, stream);
    case Fp8Variant::poly2: return fa3_fp8_variant_at<Fp8Variant::poly2, Whole>(p, stream);
    case Fp8Variant::tv: return fa3_fp8_variant_at<Fp8Variant::tv, Whole>(p, stream);
    case Fp8Variant::split: return fa3_fp8_variant_at<Fp8Variant::base, Whole>(p, stream);
    case Fp8Variant::vs: return fa3_fp8_variant_at<Fp8Variant::vs, Whole>(p, stream);
    case Fp8Variant::vm1:  // one instantiation: the SM count is p's
    case Fp8Variant::vm2:
    case Fp8Variant::vm4: return fa3_fp8_variant_at<Fp8Variant::vm2, Whole>(p, stream);
  }
  return cudaErrorInvalidValue;
}

// The attention kernel of variant v's tile.
inline cudaError_t fa3_fp8_attention(const Fp8FwdParams& p, Fp8Variant v, cudaStream_t stream) {
  return fa3_fp8_variant<false>(p, v, stream);
}

// Split workspace bytes for variant v on p (0 unless v splits and p's tail does).
inline int64_t fp8_variant_split_bytes(const Fp8FwdParams& p, Fp8Variant v) {
  if (!fp8_variant_splits(v)) return 0;
  return fp8_split_bytes(fp8_variant_params(p, v), fp8_variant_block_m(v, p.head_dim),
                         fp8_variant_block_n(v, p.head_dim));
}

// V^T synchronisation bytes for variant v on p (0 unless v makes its own V^T).
inline int64_t fp8_variant_vt_sync_bytes(const Fp8FwdParams& p, Fp8Variant v) {
  return fp8_variant_shares_vt_at(v, p.head_dim) ? fp8_vt_sync_bytes(p, fp8_variant_block_n(v, p.head_dim)) : 0;
}

// The whole forward on variant v's tile: the V^T pre-pass (tv: none; vs: the
// zeroing of its words), then attention.
inline cudaError_t fa3_fp8_fwd(const Fp8FwdParams& p, Fp8Variant v, cudaStream_t stream) {
  return fa3_fp8_variant<true>(p, v, stream);
}

}  // namespace fa
