// Conversions between float and the 16-bit storage types, in pairs (the mma
// fragments hold two adjacent columns per 32-bit register).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace fa {

template <typename Elem>
struct ElemTraits;

template <>
struct ElemTraits<__half> {
  static constexpr bool is_bf16 = false;
  __device__ static uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __host__ __device__ static float to_float(__half x) { return __half2float(x); }
  __host__ __device__ static __half from_float(float x) { return __float2half_rn(x); }
  __device__ static float2 unpack(uint32_t x) {
    return __half22float2(*reinterpret_cast<const __half2*>(&x));
  }
};

template <>
struct ElemTraits<__nv_bfloat16> {
  static constexpr bool is_bf16 = true;
  __device__ static uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __host__ __device__ static float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  __host__ __device__ static __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
  __device__ static float2 unpack(uint32_t x) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
  }
};

// Packs two floats into one register of Elem pairs (lo in the low half).
template <typename Elem>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  return ElemTraits<Elem>::pack(lo, hi);
}

// The inverse: one register of Elem pairs to two floats (x = low half).
template <typename Elem>
__device__ __forceinline__ float2 unpack2(uint32_t x) {
  return ElemTraits<Elem>::unpack(x);
}

}  // namespace fa
