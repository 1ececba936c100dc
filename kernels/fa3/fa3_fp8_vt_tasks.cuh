// The e4m3 fa3 forward's shared V^T (Fp8Args::vt_sync set): V^T made once per
// launch, by the producer warpgroup's idle warps 1..3 (Fa3Fp8Fwd::vt_team in
// fa3_fp8_kernel.cuh) or by a kernel of its own beside it (fa3_fp8_vt_maker.cuh),
// each V block once for every tile that reads it, counted per block; the TMA
// thread waits for a block's count before it loads that block (wait_vt_block,
// below). The order and the words: fa3_fp8_vt_tasks.h. Also the pre-pass's
// shared pieces (the staged tile's chunk order, the 4 x 4 byte transpose) and
// the acquire / release words.
#pragma once
#include <cstdint>

#include "common/sm90/wgmma_fp8.cuh"  // e4m3_key_order
#include "fa3/fa3_fp8_args.cuh"
#include "fa3/fa3_fp8_vt_tasks.h"

namespace fa::fa3 {

__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// Global memory written by ordinary stores and read by TMA (the async proxy).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

// Where 16-byte chunk c of row r of a tile of V rows staged for transposing
// sits (the pre-pass's tile): c XOR a function of the row, so that
// the 16 rows one warp reads a word from at once (keys e4m3_key_order(4w + j),
// w = 0..15: rows 2t + 16h + 32b + const) fall on different banks (2-way at
// most; head_dim 64's 4 chunks: 4-way). `chunks` is a power of two.
__device__ __forceinline__ int vt_tile_chunk(int r, int c, int chunks) {
  return c ^ ((((r >> 1) & 3) | ((r >> 2) & 4)) & (chunks - 1));
}

// A 4 x 4 byte square transposed with byte permutes: byte k of a[j] becomes
// byte j of out[k]. a[j] holds head_dim rows 4q .. 4q + 3 of key
// e4m3_key_order(4w + j); out[k] is then word w of V^T row 4q + k. The
// pre-pass's.
__device__ __forceinline__ void vt_square_transpose(const uint32_t (&a)[4], uint32_t (&out)[4]) {
  const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
  const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
  out[0] = __byte_perm(lo01, lo23, 0x5410), out[1] = __byte_perm(lo01, lo23, 0x7632);
  out[2] = __byte_perm(hi01, hi23, 0x5410), out[3] = __byte_perm(hi01, hi23, 0x7632);
}

// Queue block t of the launch (fp8_vt_task_at) over `pairs` (batch *
// heads_kv): the makers of a whole block at a time (vt_team, vt_maker_kernel).
__device__ __forceinline__ Fp8VtTask vt_block_task(const Fp8Args& a, int t, int pairs) {
  return fp8_vt_task_at(t, pairs, a.vt_blocks, a.vt_group);
}

// Block `task` is in V^T: its count, and the total. The caller has seen the
// block's store complete; the proxy fence orders that write before the release.
__device__ __forceinline__ void vt_block_done(const Fp8Args& a, const Fp8VtTask& task) {
  fence_proxy_async_global();
  red_release_gpu_add(a.vt_sync + kVtCountWords + task.pair * a.vt_blocks + task.block, 1u);
  red_release_gpu_add(a.vt_sync + kVtDoneWord, 1u);
}

// The TMA thread, before it loads V^T block `block` of pair `pair`: once every
// block of the launch is done (the total), true, and no block needs asking
// again; until then, wait for this block's count. The proxy fence orders what
// the acquire saw before the TMA reads that follow.
__device__ __forceinline__ bool wait_vt_block(const Fp8Args& a, int pair, int block) {
  const bool all = ld_acquire_gpu(a.vt_sync + kVtDoneWord) >= unsigned(a.vt_tasks);
  if (!all) {
    const unsigned* count = a.vt_sync + kVtCountWords + pair * a.vt_blocks + block;
    while (ld_acquire_gpu(count) == 0u) __nanosleep(64);
  }
  fence_proxy_async_global();
  return all;
}

}  // namespace fa::fa3
