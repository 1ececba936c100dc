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

  // As wait, for a thread with nothing else to do meanwhile (a producer waiting
  // for a free stage): each try may suspend the thread until the phase completes
  // (or 10 ms pass) rather than fail at once, so the wait does not spin
  // through issue slots that the consumer warps of its SM sub-partition need.
  // The plain try in a loop spun ~2.9 M times per launch in fa3's producer at
  // hd64 causal 512, 9 % of the kernel's instructions (ncu; PERF_NOTES
  // fa3-producer-suspended-wait).
  __device__ void wait_suspended(uint32_t parity) {
    const uint32_t suspend_ns = 10'000'000;  // a local: the wrapper takes it by reference
    while (!cuda::ptx::mbarrier_try_wait_parity(&word, parity, suspend_ns)) {
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
