// stmatrix (sm_90): a warp stores four 8x8 16-bit matrices, the inverse of
// ldmatrix_x4 (common/mma_sm80.cuh). Used by the FP8 forward's in-kernel V
// transpose (fa3/fa3_fp8_kernel.cuh, transpose_block).
#pragma once
#include <cstdint>

namespace fa::sm90 {

// Register m of lane 4g + t is word t (16-bit columns 2t, 2t+1) of row g of
// matrix m; lane l gives the address of row l % 8 of matrix l / 8 (16 bytes,
// 16-byte aligned, any rows).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
#endif
}

}  // namespace fa::sm90
