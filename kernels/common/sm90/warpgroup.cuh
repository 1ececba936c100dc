// Which warpgroup (128 threads) of the block a thread is in, as a value the
// compiler sees is the same in every lane of a warp: read from lane 0. Written
// threadIdx.x / 128 it is per thread to the compiler, so what derives from it (a
// consumer's Q rows and descriptors, its turn barriers) takes vector registers
// and is moved into uniform ones before each wgmma; read this way it stays in
// uniform registers (16-38 fewer instructions in the fa3 forward's block loop).
// Fewer instructions did not always run faster: each kernel's traits say
// whether it reads the index so (PERF_NOTES fa3-uniform-warpgroup-index).
#pragma once

namespace fa::sm90 {

__device__ __forceinline__ int warpgroup_index() { return __shfl_sync(0xffffffffu, int(threadIdx.x) / 128, 0); }

}  // namespace fa::sm90
