// wgmma (warpgroup matrix multiply-accumulate, sm_90a) wrappers: shared-memory
// matrix descriptors for the 128-byte swizzle, the fence / commit / wait
// protocol, and the m64nNk16 instructions themselves (wgmma_ops.inc).
//
// Register layout of an m64nN float accumulator (and of the m64k16 A operand):
// warp w of the warpgroup holds rows 16w..16w+15; lane = 4 * g + t holds rows
// 16w + g and 16w + g + 8; element d[4j + 0..1] is (row g, cols 8j + 2t + 0..1),
// d[4j + 2..3] is (row g + 8, the same cols). This equals the A-operand layout
// of k16 steps, so S's accumulator becomes P's A fragment without a shuffle.
#pragma once
#include <cstdint>

#include "common/sm90/arch.cuh"

namespace fa::sm90 {

// Descriptor of a 128B-swizzled operand (layout type 1 in bits 62..63).
// Addresses and offsets are in bytes and encoded in 16-byte units.
//  - K-major (rows of 64 contiguous k elements, 128 B each, 8-row atoms of
//    1024 B): stride_bytes = 1024 between 8-row groups; leading unused (1).
//  - MN-major (64 contiguous MN elements per 128 B row, k along rows):
//    stride_bytes = 1024 between 8-k groups, leading_bytes = distance between
//    64-wide MN panels. A k16 step is +16 rows (2048 B). B reads this with
//    TransB = 1 (the forward's V); A with TransA = 1 (the backward's dS, stored
//    as dS^T rows of keys, read as the M x K operand of dQ = dS K).
// The tile base must be 1024-byte aligned: the swizzle is a function of the
// address bits, which is also why a k16 step inside a K-major panel is a plain
// +32 bytes on the start address.
__device__ __forceinline__ uint64_t smem_desc_sw128(const void* smem, uint32_t leading_bytes,
                                                    uint32_t stride_bytes) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t d = 0;
  d |= uint64_t((addr & 0x3FFFF) >> 4);
  d |= uint64_t((leading_bytes & 0x3FFFF) >> 4) << 16;
  d |= uint64_t((stride_bytes & 0x3FFFF) >> 4) << 32;
  d |= uint64_t(1) << 62;
  return d;
}

// Orders this thread's register accesses before the wgmmas that follow.
__device__ __forceinline__ void wgmma_fence() {
#if FA_SM90A_ENABLED
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if FA_SM90A_ENABLED
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Wait until at most `Pending` committed groups are still running.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if FA_SM90A_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

// Pin an accumulator array at this point of the program: the compiler may not
// move reads or writes of these registers across it. Used around wgmma_wait,
// whose asm names no registers.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&d)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(d[i][j])::"memory");
}

template <int N>
struct WgmmaOp;  // specialised per N in wgmma_ops.inc

#if FA_SM90A_ENABLED
#include "common/sm90/wgmma_ops.inc"
#else
// Host pass and non-sm_90a device passes: same interface, no instruction.
template <int N>
struct WgmmaOp {
  template <bool IsBf16, int TransB, int TransA = 0>
  static __device__ __forceinline__ void ss(float (&)[N / 2], uint64_t, uint64_t, int) {}
  template <bool IsBf16, int TransB>
  static __device__ __forceinline__ void rs(float (&)[N / 2], const uint32_t (&)[4], uint64_t, int) {}
};
#endif

}  // namespace fa::sm90
