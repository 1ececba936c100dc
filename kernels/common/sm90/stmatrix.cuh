// stmatrix (sm_90): a warp stores 8x8 matrices of 16-bit elements from the
// register layout of an mma / wgmma accumulator row pair into shared memory.
// One instruction replaces four 4-byte st.shared per thread.
#pragma once
#include <cstdint>

namespace fa::sm90 {

// Four 8x8 matrices: lane i gives the shared address of row i % 8 of matrix
// i / 8 (16 contiguous bytes); register k holds this lane's two elements of
// matrix k, row lane / 4, columns 2 (lane % 4) and 2 (lane % 4) + 1.
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

}  // namespace fa::sm90
