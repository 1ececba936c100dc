// The e4m3 fa3 forward's own V^T (Fp8Args::vt_sync set): the producer
// warpgroup's idle warps 1..3 take 32-key tasks off a queue and write V^T to
// global memory, each V block once for every tile that reads it; the TMA thread
// waits for a block's count before it loads that block. The order and the
// words: fa3_fp8_vt_tasks.h. Meant to take the pre-pass's launch and its pass
// over memory off the row, and, unlike the per-block transpose in shared memory
// (Traits::kTransposeV), to transpose each V block once, not once per tile. In
// the paper sweep it measured level with the pre-pass at hd128 up to 4096
// tokens and 1 % slower beyond (docs/PERF_NOTES.md fa3-fp8-vt-shared): built
// for fp8_check's `vs` variant only (Fa3Fp8Traits ShareVt).
//
// Progress needs no co-resident grid: a task is taken off the queue only by a
// running warp, which finishes it without waiting for anything.
#pragma once
#include <cstdint>

#include "common/mma_sm80.cuh"  // smem_addr, cp_async_16
#include "common/sm90/griddep.cuh"
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
// sits (the pre-pass's tile, and a task's): c XOR a function of the row, so that
// the 16 rows one warp reads a word from at once (keys e4m3_key_order(4w + j),
// w = 0..15: rows 2t + 16h + 32b + const) fall on different banks (2-way at
// most; head_dim 64's 4 chunks: 4-way). `chunks` is a power of two.
__device__ __forceinline__ int vt_tile_chunk(int r, int c, int chunks) {
  return c ^ ((((r >> 1) & 3) | ((r >> 2) & 4)) & (chunks - 1));
}

// A 4 x 4 byte square transposed with byte permutes: byte k of a[j] becomes
// byte j of out[k]. a[j] holds head_dim rows 4q .. 4q + 3 of key
// e4m3_key_order(4w + j); out[k] is then word w of V^T row 4q + k. The
// pre-pass's and a task's.
__device__ __forceinline__ void vt_square_transpose(const uint32_t (&a)[4], uint32_t (&out)[4]) {
  const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
  const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
  out[0] = __byte_perm(lo01, lo23, 0x5410), out[1] = __byte_perm(lo01, lo23, 0x7632);
  out[2] = __byte_perm(hi01, hi23, 0x5410), out[3] = __byte_perm(hi01, hi23, 0x7632);
}

// One task: 32 keys (key0, a multiple of 32) x head_dim of one pair, through
// this warp's 32 x head_dim bytes of shared memory (`stage`). Every 16-byte
// chunk of the 32 V rows is requested at once (cp.async, zeros past seqlen_k),
// so that a warp has the whole task in flight, not a register's worth; the
// chunks are XOR-swizzled by row as in the pre-pass (vt_tile_chunk). Then lane
// (w = lane % 8, q0 = lane / 8) takes the 4 x 4 byte squares of V^T word w
// (keys e4m3_key_order(4w + j)) and head_dim rows 4q .. 4q + 3, q = q0, q0 + 4,
// ..., transposes each (vt_square_transpose), and writes word w of its 4 V^T
// rows: a store instruction writes 4 rows x 32 bytes.
template <int HeadDim>
__device__ __forceinline__ void vt_task(const uint8_t* __restrict__ v, uint8_t* __restrict__ vt, uint8_t* stage,
                                        int64_t v_row_stride, int seqlen_k, int seqlen_vt, int key0, int lane) {
  constexpr int kChunks = HeadDim / 16;  // 16-byte chunks per V row
  const uint32_t st = smem_addr(stage);
#pragma unroll 1
  for (int i = lane; i < 32 * kChunks; i += 32) {
    const int r = i / kChunks, c = i % kChunks, key = key0 + r;
    const bool in = key < seqlen_k;
    cp_async_16(st + r * HeadDim + 16 * vt_tile_chunk(r, c, kChunks), v + (in ? key : 0) * v_row_stride + 16 * c, in);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncwarp();
  const int w = lane % 8;
  uint8_t* dst = vt + key0 + 4 * w;
#pragma unroll 1
  for (int q = lane / 8; q < HeadDim / 4; q += 4) {
    uint32_t a[4];  // a[j]: head_dim 4q .. 4q + 3 of key e4m3_key_order(4w + j)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r = sm90::e4m3_key_order(4 * w + j);
      a[j] = *reinterpret_cast<const uint32_t*>(stage + r * HeadDim + 16 * vt_tile_chunk(r, q / 4, kChunks) + 4 * (q % 4));
    }
    uint8_t* row = dst + int64_t(4 * q) * seqlen_vt;
    uint32_t out[4];
    vt_square_transpose(a, out);
    *reinterpret_cast<uint32_t*>(row) = out[0];
    *reinterpret_cast<uint32_t*>(row + seqlen_vt) = out[1];
    *reinterpret_cast<uint32_t*>(row + 2 * int64_t(seqlen_vt)) = out[2];
    *reinterpret_cast<uint32_t*>(row + 3 * int64_t(seqlen_vt)) = out[3];
  }
  __syncwarp();  // every lane's reads of the stage done before the next task's copies
}

// One warp: tasks off the queue until it is empty. After each, lane 0 adds
// it to its block's count and to the total with release semantics, behind a
// warp barrier that orders every lane's stores (and their proxy fences, for
// the TMA reads of other blocks) before it.
template <int HeadDim, int BlockN>
__device__ __forceinline__ void vt_worker(const Fp8Args& a, uint8_t* stage) {
  const int lane = threadIdx.x % 32;
  const int pairs = a.batch * a.heads_kv;
  for (;;) {
    int t = 0;
    if (lane == 0) t = int(atomicAdd(a.vt_sync + kVtQueueWord, 1u));
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t >= a.vt_tasks) return;
    const Fp8VtTask task = fp8_vt_task_at(t, pairs, a.vt_blocks, BlockN / 32, a.vt_group);
    // A unit past the padded row has nothing to write, but counts: every block
    // is then done at block_n / 32, which the TMA thread compares with.
    if (task.unit < fp8_vt_block_units(task.block, BlockN, a.seqlen_vt)) {
      const int b = int(unsigned(task.pair) / unsigned(a.heads_kv)), h = task.pair - b * a.heads_kv;
      const uint8_t* v = a.v + b * a.v_batch_stride + h * a.v_head_stride;
      uint8_t* vt = a.vt + int64_t(task.pair) * HeadDim * a.seqlen_vt;
      vt_task<HeadDim>(v, vt, stage, a.v_row_stride, a.seqlen_k, a.seqlen_vt, task.block * BlockN + 32 * task.unit,
                       lane);
      fence_proxy_async_global();
    }
    __syncwarp();
    if (lane == 0) {
      red_release_gpu_add(a.vt_sync + kVtCountWords + task.pair * a.vt_blocks + task.block, 1u);
      red_release_gpu_add(a.vt_sync + kVtDoneWord, 1u);
    }
  }
}

// The TMA thread, before it loads V^T block `block` of pair `pair`: once every
// unit of the launch is done (the total), true, and no block needs asking
// again; until then, wait for this block's units. The proxy fence orders what
// the acquire saw before the TMA reads that follow.
template <int BlockN>
__device__ __forceinline__ bool wait_vt_block(const Fp8Args& a, int pair, int block) {
  const bool all = ld_acquire_gpu(a.vt_sync + kVtDoneWord) >= unsigned(a.vt_tasks);
  if (!all) {
    const unsigned* count = a.vt_sync + kVtCountWords + pair * a.vt_blocks + block;
    while (ld_acquire_gpu(count) < unsigned(BlockN / 32)) __nanosleep(64);
  }
  fence_proxy_async_global();
  return all;
}

}  // namespace fa::fa3
