// FP8 (e4m3) pieces of the sm_90a toolbox: the m64nNk32 wgmma calls
// (wgmma_fp8_ops.inc), shared-memory descriptors for the 64- or 128-byte
// swizzle, TMA maps over tensors of 1-byte elements, and float -> e4m3 packing.
//
// An e4m3 operand is K-major in shared memory (wgmma has no transpose for 8-bit
// types): rows of K bytes. A row of 128 bytes (128 elements) is one 128B-swizzle
// row, so a K extent of 128 bytes or more is cut into 128-byte panels; a K
// extent of 64 bytes (head_dim 64) uses the 64B swizzle, whose rows are 64 bytes.
// A k32 step is 32 bytes along a row, inside one swizzle row either way: a plain
// byte offset on the descriptor's start address (the swizzle is a function of
// the address bits, so the panel base must be aligned to the swizzle atom:
// 1024 bytes for 128B, 512 for 64B).
//
// Register layouts (PTX ISA, "Matrix fragments for wgmma.m64nNk32"), warp w of
// the warpgroup, lane = 4 g + t:
//  - f32 accumulator: as for k16 (wgmma.cuh): d[4j + e] is (row 16w + g, col
//    8j + 2t + e), d[4j + 2 + e] is (row 16w + g + 8, the same col), e = 0, 1.
//  - e4m3 A operand (64 x 32), 4 registers of 4 bytes, byte i of a register the
//    i-th (lowest k first): a[0] = row g, k 4t..4t+3; a[1] = row g + 8, k 4t..4t+3;
//    a[2] = row g, k 16+4t..16+4t+3; a[3] = row g + 8, k 16+4t..16+4t+3.
// So a thread's accumulator columns (pairs 2t, 2t+1 of each 8) are not the k
// indices it must supply (quads 4t..4t+3): see e4m3_key_order below.
#pragma once
#include <cstdint>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "common/sm90/arch.cuh"
#include "common/sm90/tma.cuh"

namespace fa::sm90 {

// Descriptor of a K-major swizzled operand, swizzle_bytes = 128 (layout type 1,
// 8-row atoms of 1024 B) or 64 (layout type 2, atoms of 512 B); stride = one
// atom between 8-row groups, leading byte offset unused (1) for swizzled K-major.
__device__ __forceinline__ uint64_t smem_desc_kmajor(const void* smem, int swizzle_bytes) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t stride = 8 * swizzle_bytes;
  uint64_t d = 0;
  d |= uint64_t((addr & 0x3FFFF) >> 4);
  d |= uint64_t(1) << 16;
  d |= uint64_t((stride & 0x3FFFF) >> 4) << 32;
  d |= uint64_t(swizzle_bytes == 128 ? 1 : 2) << 62;
  return d;
}

// Four floats -> four e4m3 bytes (round to nearest even, saturating at 448), x0
// in the lowest byte. cvt's e4m3x2 form puts its first source in the upper byte.
__device__ __forceinline__ uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(x3), "f"(x2));
  return uint32_t(lo) | (uint32_t(hi) << 16);
#else
  (void)x0, (void)x1, (void)x2, (void)x3;
  return 0u;
#endif
}

// Where the PV product's k index comes from, for P taken straight from the S
// accumulator. In each k32 step, A's k index kk = 16 h + 4 t + i (h = 0, 1; the
// thread's quad t; byte i) is filled with the accumulator column of the same
// thread, 16 h + 8 (i / 2) + 2 t + (i % 2): no data moves between threads. The
// product sums over k, so it stays P V as long as row kk of V's operand holds
// key e4m3_key_order(kk): the V^T pre-pass writes keys in this order.
__host__ __device__ constexpr int e4m3_key_order(int kk) {
  const int base = kk & ~31, r = kk & 31;
  const int h = r / 16, t = (r / 4) % 4, i = r % 4;
  return base + 16 * h + 8 * (i / 2) + 2 * t + (i % 2);
}

template <int N>
struct WgmmaE4m3;  // specialised per N in wgmma_fp8_ops.inc

#if FA_SM90A_ENABLED
#include "common/sm90/wgmma_fp8_ops.inc"
#else
template <int N>
struct WgmmaE4m3 {  // host pass and other architectures: same interface, no instruction
  static __device__ __forceinline__ void ss(float (&)[N / 2], uint64_t, uint64_t, int) {}
  static __device__ __forceinline__ void rs(float (&)[N / 2], const uint32_t (&)[4], uint64_t, int) {}
};
#endif

// A 4-D TMA map over 1-byte elements: dims innermost first, byte strides of dims
// 1..3 (multiples of 16), a box of box[0] bytes (64 or 128, the swizzle width)
// by box[1] rows (<= 256) by 1 by 1. Out-of-bounds elements read as zero bytes.
inline cudaError_t make_u8_tensor_map(CUtensorMap* map, const void* base, const uint64_t (&dims)[4],
                                      const uint64_t (&strides)[3], int box_bytes, int box_rows) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  cudaError_t err = get_tensor_map_encoder(&encode);
  if (err != cudaSuccess) return err;
  const cuuint64_t d[4] = {dims[0], dims[1], dims[2], dims[3]};
  const cuuint64_t s[3] = {strides[0], strides[1], strides[2]};
  const cuuint32_t box[4] = {cuuint32_t(box_bytes), cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, const_cast<void*>(base), d, s, box, elem_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                      box_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace fa::sm90
