// Shared-memory mbarriers (TMA completion, producer/consumer hand-off) and
// named barriers (ordering between consumer warpgroups), as small wrappers so
// the kernel reads as "wait until full", "release the stage".
#pragma once
#include <cstdint>

#include <cuda/ptx>

#include "common/named_barrier.cuh"

namespace fa::sm90 {

// One mbarrier: 8 bytes of shared memory. Phases alternate 0, 1, 0, ...; a
// waiter names the parity of the phase it waits to see completed.
struct MBarrier {
  uint64_t word;

  __device__ void init(uint32_t arrivals) { cuda::ptx::mbarrier_init(&word, arrivals); }

  // The producer announces the bytes a TMA copy will deliver, then arrives; the
  // phase completes when the arrivals are in and the bytes have landed.
  __device__ void arrive_expect_tx(uint32_t bytes) {
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &word, bytes);
  }

  __device__ void arrive() {
    cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                               cuda::ptx::space_shared, &word);
  }

  // Spin until the phase with `parity` has completed. A fresh barrier counts
  // its (virtual) previous phase, parity 1, as completed: a producer waiting
  // for "empty" with parity 1 passes at once on its first lap.
  __device__ void wait(uint32_t parity) {
    while (!cuda::ptx::mbarrier_try_wait_parity(&word, parity)) {
    }
  }
};

// Makes mbarrier initialisation visible to the async proxy (TMA) before use.
__device__ __forceinline__ void fence_barrier_init() {
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
}

// Ordinary shared-memory stores that TMA or wgmma read next need this in each
// writing thread before the barrier that publishes them.
__device__ __forceinline__ void fence_proxy_async_smem() {
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
}

using fa::named_barrier_arrive;
using fa::named_barrier_sync;

}  // namespace fa::sm90
