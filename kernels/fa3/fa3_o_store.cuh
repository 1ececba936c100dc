// O's rows leaving a wgmma accumulator for global memory in 16-byte stores,
// shared by the bf16/fp16 and the e4m3 forward kernels. In an m64nHD f32
// accumulator thread (g, t) of a warp holds rows g and g + 8 of its 16, columns
// 8j + 2t and 8j + 2t + 1 at o[4j + 2r] and o[4j + 2r + 1] (r: 0 for row g, 1 for
// g + 8). Stored as they sit, a warp instruction writes 8 rows x 16 bytes, which
// filled the store queue (PERF_NOTES fa3-16-byte-o-stores); a 4x4 transpose of
// 4-byte pieces inside each quad gives every lane one 16-byte chunk instead.
#pragma once
#include <cstdint>

#include "common/convert.cuh"  // pack2

namespace fa::fa3 {

// A quad's 4x4 transpose of 4-byte pieces: on entry lane t holds piece t (columns
// 2t, 2t+1) of the row's 16-byte chunks 0..3 (v[k] = chunk k); on return it holds the
// four pieces of chunk t, ready for one 16-byte store. Two butterfly steps (lanes t^2,
// then t^1), each swapping the half whose chunk bit differs from the lane's.
__device__ __forceinline__ uint4 quad_transpose(const uint32_t (&v)[4], int t) {
  const bool b1 = t & 2, b0 = t & 1;
  uint32_t a[2][2];  // a[j][s1]: chunk 2*b1 + j, piece of lane (s1, b0)
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint32_t keep = b1 ? v[2 + j] : v[j];
    const uint32_t got = __shfl_xor_sync(0xffffffffu, b1 ? v[j] : v[2 + j], 2);
    a[j][0] = b1 ? got : keep;
    a[j][1] = b1 ? keep : got;
  }
  uint32_t w[4];  // w[s]: chunk t, piece of lane s
#pragma unroll
  for (int s1 = 0; s1 < 2; ++s1) {
    const uint32_t keep = b0 ? a[1][s1] : a[0][s1];
    const uint32_t got = __shfl_xor_sync(0xffffffffu, b0 ? a[0][s1] : a[1][s1], 1);
    w[2 * s1] = b0 ? got : keep;
    w[2 * s1 + 1] = b0 ? keep : got;
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Row r (0: g, 1: g + 8) of this thread's accumulator o, columns 32q .. 32q + 31,
// times f, in Elem: v[k] holds the lane's piece of 16-byte chunk 4q + k, as
// quad_transpose takes them.
template <typename Elem, int HD>
__device__ __forceinline__ void pack_o_chunks(uint32_t (&v)[4], const float (&o)[HD / 2], int r, int q, float f) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int j = 4 * q + k;
    v[k] = pack2<Elem>(o[4 * j + 2 * r] * f, o[4 * j + 2 * r + 1] * f);
  }
}

// Row r of o, times f, in Elem, to out (the row's first element; 16-byte
// aligned): each quad writes 64 contiguous bytes per instruction. Every lane of
// the warp must call it (the shuffles); `write` false skips the stores only (a
// row past seqlen_q). The bf16 kernel's store_tile keeps this loop in its own
// body: called through here, ptxas made each predicated store a branch with its
// address rebuilt (24 more instructions per tile at hd128).
template <typename Elem, int HD>
__device__ __forceinline__ void store_o_row(Elem* out, const float (&o)[HD / 2], int r, float f, int t, bool write) {
#pragma unroll
  for (int q = 0; q < HD / 32; ++q) {
    uint32_t v[4];
    pack_o_chunks<Elem, HD>(v, o, r, q, f);
    const uint4 w = quad_transpose(v, t);
    // st.global.v4 in PTX: written as a uint4 store, ptxas split the first
    // chunk of each row back into four 4-byte STGs (SASS at 5fbab10).
    if (write)
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(out + 32 * q + 8 * t), "r"(w.x), "r"(w.y),
                   "r"(w.z), "r"(w.w)
                   : "memory");
  }
}

}  // namespace fa::fa3
