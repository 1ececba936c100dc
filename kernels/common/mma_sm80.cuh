// Ampere-class warp-level instructions, which also run on Hopper: ldmatrix,
// mma.sync m16n8k16 (16-bit inputs, float32 accumulate), cp.async, and the XOR
// swizzle used for every 16-bit tile in shared memory.
//
// Fragment layouts of mma.m16n8k16 (lane = 4*g + t, g = lane/4, t = lane%4):
//   A 16x16 (row-major): a0 (row g,   k 2t..2t+1)  a1 (row g+8, k 2t..2t+1)
//                        a2 (row g,   k 2t+8..9)   a3 (row g+8, k 2t+8..9)
//   B 16x8 (k x n):      b0 (k 2t..2t+1, col g)    b1 (k 2t+8..9, col g)
//   C 16x8 (float):      c0,c1 (row g, cols 2t, 2t+1)  c2,c3 (row g+8, same cols)
// So the C fragments of two adjacent n-tiles are, packed to 16 bits, exactly the
// A fragment of a 16x16 tile: FA2 reuses the S accumulator as P without shared memory.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace fa {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 16-bit matrices; lane l gives the address of row l%8 of matrix l/8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Same, transposed on the way (for V, whose rows are the k dimension of P V).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// C += A * B for one 16x8x16 tile; Elem selects the bf16 or f16 instruction.
// Not volatile: a pure register operation the scheduler may move freely.
template <typename Elem>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4],
                                                         uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const uint32_t (&a)[4],
                                                  uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16-byte global -> shared copy that bypasses L1 (.cg). With valid == false the
// source is not read and the 16 bytes are zero-filled: ragged tails load zeros,
// never garbage that could turn 0 * x into NaN.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
// 4-byte copy (through L1: .cg takes only 16 bytes), zero-filled when !valid.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, bool valid) {
  int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Shared-memory tiles of 16-bit elements, `Cols` per row (a multiple of 64), are
// stored in 16-byte chunks with chunk c of row r at position c ^ (r % 8). An
// ldmatrix (8 rows, same logical chunk) and a cp.async row both then touch 8
// distinct 16-byte bank groups: no bank conflicts, no padding.
template <int Cols>
__device__ __forceinline__ int swizzle(int row, int col) {
  static_assert(Cols % 64 == 0, "swizzle needs rows of at least 8 chunks of 16 bytes");
  int chunk = col >> 3;
  return row * Cols + (((chunk ^ (row & 7)) << 3) | (col & 7));
}

// ldmatrix addressing in a swizzled tile without a register per address: given a
// lane's shared address of logical chunk c (0 or 1) in its row, the address of chunk
// c + 2k is one XOR and one immediate add, because the swizzle only permutes bits
// 4-6 of the byte offset. Needs the tile start and row pitch 128-byte aligned.
__device__ __forceinline__ uint32_t swizzle_base(const void* tile, int row, int cols, int chunk) {
  return smem_addr(tile) + uint32_t(row * cols * 2 + ((chunk ^ (row & 7)) << 4));
}
__device__ __forceinline__ uint32_t swizzle_step(uint32_t base, int k) {
  return (base ^ uint32_t((k * 32) & 0x60)) + uint32_t((k * 32) & ~0x7f);
}
// The general form: the address n chunks further along the row, for a base whose
// logical chunk shares no bit with n's low three (no carry between them: e.g. a
// base chunk below a power of two that divides n). swizzle_step(base, k) is
// swizzle_chunks(base, 2k) for a base chunk of 0 or 1.
__device__ __forceinline__ uint32_t swizzle_chunks(uint32_t base, int n) {
  return (base ^ uint32_t((n & 7) << 4)) + uint32_t((n >> 3) << 7);
}

// Copies a Rows x Cols tile (row stride `ld` elements in global memory) into a
// swizzled shared tile with cp.async; rows >= valid_rows are zero-filled. Each
// thread keeps one column and steps down the rows, so the loop needs one address
// register pair, not one per chunk (register pressure matters in the mainloop).
template <int Rows, int Cols, int Threads, typename Elem>
__device__ __forceinline__ void load_tile_async(Elem* smem, const Elem* gmem, int64_t ld,
                                                int valid_rows, int tid) {
  constexpr int kChunksPerRow = Cols / 8;
  static_assert(Threads % kChunksPerRow == 0, "a thread keeps one column of chunks");
  constexpr int kRowStep = Threads / kChunksPerRow;
  static_assert(Rows % kRowStep == 0, "tile rows must divide evenly over the threads");
  const int row0 = tid / kChunksPerRow;
  const int col = (tid % kChunksPerRow) * 8;
  const Elem* src = gmem + row0 * ld + col;
#pragma unroll
  for (int i = 0; i < Rows / kRowStep; ++i) {
    const int row = row0 + i * kRowStep;
    const bool valid = row < valid_rows;
    // An out-of-range row still needs a mapped address: point at the tile's start.
    cp_async_16(smem_addr(smem + swizzle<Cols>(row, col)), valid ? src : gmem, valid);
    src += kRowStep * ld;
  }
}

// Key block n of K and V (rows n*Rows on; those at or past seqlen_k zero-filled) into
// the shared tiles sK and sV; gK, gV point at row 0 of the head.
template <int Rows, int Cols, int Threads, typename Elem>
__device__ __forceinline__ void load_kv_block_async(Elem* sK, Elem* sV, const Elem* gK,
                                                    const Elem* gV, int64_t k_ld, int64_t v_ld,
                                                    int n, int seqlen_k, int tid) {
  const int valid_rows = seqlen_k - n * Rows;
  load_tile_async<Rows, Cols, Threads>(sK, gK + int64_t(n) * Rows * k_ld, k_ld, valid_rows, tid);
  load_tile_async<Rows, Cols, Threads>(sV, gV + int64_t(n) * Rows * v_ld, v_ld, valid_rows, tid);
}

}  // namespace fa
