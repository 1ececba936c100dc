// What the GPU passes over blocks of query rows share (the float64 reference
// here, the tolerance rule's standard in check/): device buffers, CUDA and
// cuBLAS errors as the tool's exceptions, one head of a BSHD tensor converted
// to the compute type, and a block-wide reduction. CUDA only; no fmt (nvcc's
// C++20 front end rejects its headers).
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "core/errors.h"
#include "core/types.h"

namespace fa::gpurows {

// A failed CUDA call: OutOfMemory for an allocation (the point becomes an oom
// row), KernelError otherwise, sticky when the context no longer answers.
inline void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  const std::string msg = std::string(what) + " failed: " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) throw OutOfMemory(msg);
  throw KernelError(msg, cudaDeviceSynchronize() != cudaSuccess);
}

inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const std::string msg = std::string(what) + " failed: " + cublasGetStatusString(s);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory(msg);
  throw KernelError(msg);
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};

template <typename T>
using DeviceArray = std::unique_ptr<T, DeviceFree>;

template <typename T>
DeviceArray<T> device_array(int64_t n, const char* what) {
  void* p = nullptr;
  if (n > 0) check_cuda(cudaMalloc(&p, size_t(n) * sizeof(T)), what);
  return DeviceArray<T>(static_cast<T*>(p));
}

// The same buffer, shared (a DeviceReference's).
template <typename T>
std::shared_ptr<T> shared(DeviceArray<T> a) {
  return std::shared_ptr<T>(a.release(), DeviceFree{});
}

// A stream and a cuBLAS handle on it, for one pass; the pass waits for its
// own stream only, so the executor's stream is left alone.
class Gemm {
 public:
  Gemm() {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    if (cublasStatus_t s = cublasCreate(&handle_); s != CUBLAS_STATUS_SUCCESS) {
      cudaStreamDestroy(stream_);
      check_cublas(s, "cublasCreate");
    }
    check_cublas(cublasSetStream(handle_, stream_), "cublasSetStream");
    // Full-precision arithmetic in the type asked for: no TF32, no emulation.
    check_cublas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  ~Gemm() {
    cublasDestroy(handle_);
    cudaStreamDestroy(stream_);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  cublasHandle_t handle() const { return handle_; }
  cudaStream_t stream() const { return stream_; }
  void sync() const { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

__device__ inline float stored_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float stored_to_float(__half x) { return __half2float(x); }

// x "stored in the dtype" (bf16 or fp16, round to nearest even), as the
// tolerance rules' standards store their intermediates (check/dtype_round.h on the host).
__device__ inline float round_stored(float x, bool bf16) {
  return bf16 ? __bfloat162float(__float2bfloat16_rn(x)) : __half2float(__float2half_rn(x));
}

// dst[r][e] = src row rows[r] (rows null: row r) of head h of batch b of a
// [batch, seqlen, heads, d] tensor, times factor (in T), for r < n.
template <typename Stored, typename T>
__global__ void load_head_rows(const Stored* src, int64_t seqlen, int heads, int d, int b, int h,
                               const int64_t* rows, int64_t n, T factor, T* dst) {
  const int64_t total = n * d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, e = i % d;
    const int64_t row = rows ? rows[r] : r;
    dst[i] = T(stored_to_float(src[((int64_t(b) * seqlen + row) * heads + h) * d + e])) * factor;
  }
}

inline int grid_for(int64_t n, int threads) {
  return int(std::clamp<int64_t>((n + threads - 1) / threads, 1, 4096));
}

// Launches load_head_rows for the problem's stored dtype (bf16 or fp16).
template <typename T>
void load_head(const void* src, DType dtype, int64_t seqlen, int heads, int d, int b, int h, const int64_t* rows,
               int64_t n, T factor, T* dst, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  const int grid = grid_for(n * d, kThreads);
  if (dtype == DType::bf16)
    load_head_rows<<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(src), seqlen, heads, d, b, h,
                                                  rows, n, factor, dst);
  else
    load_head_rows<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(src), seqlen, heads, d, b, h, rows, n,
                                                  factor, dst);
  check_cuda(cudaGetLastError(), "load_head_rows launch");
}

// A maximum that keeps a NaN (fmax would drop it and hide a broken row).
template <typename T>
__device__ inline T max_keep_nan(T a, T b) {
  return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b);
}

// The block-wide maximum (take_max) or sum of v; every thread gets it.
// blockDim.x a multiple of 32, at most 1024; shm holds 32 values.
template <typename T>
__device__ T block_reduce(T v, bool take_max, T* shm) {
  for (int o = 16; o > 0; o >>= 1) {
    const T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = take_max ? max_keep_nan(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? shm[lane] : take_max ? T(-INFINITY) : T(0);
    for (int o = 16; o > 0; o >>= 1) {
      const T w = __shfl_xor_sync(0xffffffffu, v, o);
      v = take_max ? max_keep_nan(v, w) : v + w;
    }
    if (lane == 0) shm[0] = v;
  }
  __syncthreads();
  const T r = shm[0];
  __syncthreads();  // shm is free again for the next reduction
  return r;
}

// One block per row of S ([rows, ld] row-major), kSoftmaxThreads threads: its
// first seen[r] entries become exp(s - m), the rest 0; inv_l[r] = 1 / l and
// lse[r] = m + log l, or 0 and -inf for a row that sees no key (whose O and
// gradients stay 0). The float64 reference's forward and gradients share it.
constexpr int kSoftmaxThreads = 256;
template <typename T>
__global__ void softmax_rows(T* s, int64_t ld, const int64_t* seen, T* inv_l, T* lse) {
  __shared__ T shm[32];
  const int64_t r = blockIdx.x, n = seen[r];
  T* row = s + r * ld;
  for (int64_t j = n + threadIdx.x; j < ld; j += blockDim.x) row[j] = T(0);
  if (n == 0) {
    if (threadIdx.x == 0) {
      inv_l[r] = T(0);
      lse[r] = T(-INFINITY);
    }
    return;
  }
  T m = T(-INFINITY);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = max_keep_nan(m, row[j]);
  m = block_reduce(m, true, shm);
  T l = T(0);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const T e = exp(row[j] - m);
    row[j] = e;
    l += e;
  }
  l = block_reduce(l, false, shm);
  if (threadIdx.x == 0) {
    inv_l[r] = T(1) / l;
    lse[r] = m + log(l);
  }
}

}  // namespace fa::gpurows
