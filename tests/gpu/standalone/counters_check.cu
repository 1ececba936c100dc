// Checks fa::measure_dram_bytes on a launch whose traffic is known: a copy of
// a 1 GiB buffer reads 1 GiB and writes 1 GiB. The write count may fall short
// by at most the L2 size (lines still dirty in L2 when the range ends).
//
//   counters_check          measure through CUPTI and check the bounds
//   counters_check plain    only run the copy (for `ncu --metrics ...` to read
//                           the same kernel: ncu and an in-process CUPTI
//                           session cannot profile at the same time)
//
// Exits 77 (skipped) without a CUDA device, 77 too when counters cannot be
// read here (no permission, virtual GPU), printing why.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "check_cuda_throw.h"
#include "measure/counters.h"

namespace {

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void fill_index(uint32_t* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = uint32_t(i * 2654435761u);
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("counters_check: no CUDA device, skipped\n");
    return 77;
  }
  const bool plain = argc > 1 && std::string(argv[1]) == "plain";
  const size_t bytes = size_t(1) << 30, vecs = bytes / sizeof(uint4);
  try {
    void *src = nullptr, *dst = nullptr;
    CHECK_CUDA(cudaMalloc(&src, bytes));
    CHECK_CUDA(cudaMalloc(&dst, bytes));
    fill_index<<<2048, 256>>>(static_cast<uint32_t*>(src), bytes / 4);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemset(dst, 0, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());
    int sms = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    auto launch = [&] {
      copy_kernel<<<sms * 8, 512>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), vecs);
      CHECK_CUDA(cudaGetLastError());
    };

    int failures = 0;
    if (plain) {
      launch();
      CHECK_CUDA(cudaDeviceSynchronize());
    } else {
      std::string why;
      auto c = fa::measure_dram_bytes(launch, &why);
      if (!c) {
        std::printf("counters_check: counters unavailable here: %s (skipped)\n", why.c_str());
        return 77;
      }
      int l2 = 0;
      CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
      const double gib = double(bytes);
      bool read_ok = c->read_bytes >= 0.98 * gib && c->read_bytes <= 1.05 * gib;
      bool write_ok = c->write_bytes >= gib - 1.05 * l2 && c->write_bytes <= 1.05 * gib;
      std::printf("counters_check: copy of %.3f GB: DRAM read %.4f GB [%s], written %.4f GB [%s] (L2 %d MiB), "
                  "L2 hit %.1f%%\n",
                  gib / 1e9, c->read_bytes / 1e9, read_ok ? "ok" : "OUT OF BOUNDS", c->write_bytes / 1e9,
                  write_ok ? "ok" : "OUT OF BOUNDS", l2 >> 20, c->l2_hit_rate);
      failures += !read_ok + !write_ok;
    }
    // The copy must have copied: spot-check the destination.
    std::vector<uint32_t> head(4096), tail(4096);
    CHECK_CUDA(cudaMemcpy(head.data(), dst, 4096 * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(tail.data(), static_cast<char*>(dst) + bytes - 4096 * 4, 4096 * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 4096; ++i) {
      failures += head[i] != uint32_t(i * 2654435761u);
      failures += tail[i] != uint32_t((bytes / 4 - 4096 + i) * 2654435761u);
    }
    cudaFree(src), cudaFree(dst);
    std::printf("counters_check: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "counters_check: error: %s\n", e.what());
    return 1;
  }
}
