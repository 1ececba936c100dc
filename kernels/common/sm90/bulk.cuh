// The bulk copy engine beyond the tiled TMA load of tma.cuh: 1-D copies into
// shared memory that complete on an mbarrier, 1-D float32 reduce-add from
// shared to global memory, and the tiled TMA store. The last two run in "bulk
// groups" owned by the issuing thread: it commits them and waits for them.
// Also the per-thread alternative to the bulk reduce-add: a 16-byte red.
#pragma once
#include <cstdint>

#include <cuda.h>
#include <cuda/ptx>

namespace fa::sm90 {

// Copy `bytes` (a multiple of 16; both addresses 16-byte aligned) from global
// to shared memory; completion counts as transaction bytes on `bar`.
__device__ __forceinline__ void bulk_load(void* smem_dst, const void* gmem_src, uint32_t bytes, uint64_t* bar) {
  cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, smem_dst, gmem_src, bytes, bar);
}

// gmem[i] += smem[i] for `bytes` / 4 floats, atomically per element (bytes a
// multiple of 16, both addresses 16-byte aligned). One instruction moves a
// whole tile, instead of one red.global per element per thread.
__device__ __forceinline__ void bulk_reduce_add(float* gmem_dst, const float* smem_src, uint32_t bytes) {
  cuda::ptx::cp_reduce_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, cuda::ptx::op_add,
                                  gmem_dst, smem_src, bytes);
}

// gmem[i] = smem[i] for `bytes` / 4 floats (the same alignment rules): a plain
// bulk copy out of shared memory, in the same bulk groups.
__device__ __forceinline__ void bulk_store(float* gmem_dst, const float* smem_src, uint32_t bytes) {
  cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, gmem_dst, smem_src, bytes);
}

// gmem[0..3] += v, atomically per element, from registers (sm_90: one 16-byte
// reduction instead of four 4-byte ones; gmem 16-byte aligned).
__device__ __forceinline__ void red_add_v4(float* gmem, float4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(gmem), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}

// Store one box of a 4-D tensor map from shared memory (laid out as the map's
// box, swizzle included). Elements outside the tensor are not written.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, const void* smem_src, int c0, int c1, int c2,
                                             int c3) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords, smem_src);
}

// Close the bulk group of the stores / reductions issued so far by this thread.
__device__ __forceinline__ void bulk_commit() { cuda::ptx::cp_async_bulk_commit_group(); }

// Until at most `Pending` of this thread's bulk groups still read their shared
// memory source (which may then be overwritten).
template <int Pending>
__device__ __forceinline__ void bulk_wait_read() {
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<Pending>{});
}

// Until at most `Pending` of this thread's bulk groups are still incomplete:
// the others' writes to global memory are done.
template <int Pending>
__device__ __forceinline__ void bulk_wait() {
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<Pending>{});
}

}  // namespace fa::sm90
