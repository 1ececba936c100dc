// Fire-and-forget float32 additions into global memory (the L2 does the add; the
// issuing thread does not wait for a result).
#pragma once

namespace fa {

// p[0..3] += v[0..3]; p 16-byte aligned. One 16-byte reduction on sm_90 (PTX 8.1's
// red.global.add.v4.f32), four scalar ones before it.
__device__ __forceinline__ void red_add_f32x4(float* p, const float (&v)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(v[0]), "f"(v[1]),
               "f"(v[2]), "f"(v[3])
               : "memory");
#else
#pragma unroll
  for (int i = 0; i < 4; ++i) atomicAdd(p + i, v[i]);
#endif
}

}  // namespace fa
