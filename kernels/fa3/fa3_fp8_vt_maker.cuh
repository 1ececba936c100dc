// V^T made beside the e4m3 attention kernel by a kernel of its own on a few
// SMs (fp8_check's vm variants: Fa3Fp8Traits kShareVt without kVtWarps,
// Fp8FwdParams::vt_maker_blocks), launched just before the attention kernel,
// which takes the other SMs at once and waits per V^T block as with the
// producer warps' shared V^T (fa3_fp8_vt_tasks.cuh, wait_vt_block).
//
// Whole key blocks by TMA both ways: one thread loads block_n V rows per block
// (the in-kernel transpose's map, tma_v) into a ring of kRowStages; teams of
// three warps transpose a block as the in-kernel transpose does
// (Fa3Fp8Fwd::transpose_units) into a V^T stage of their own, and the team's
// first thread stores it with V^T's map (the inverse of the attention kernel's
// V^T load), so that V^T is the pre-pass's, byte for byte. A block's count
// goes up once its store is complete, one store later (the stores overlap the
// next transpose). Block m of the maker takes blocks m, m + grid, ... of the
// queue's order (fp8_vt_task_at): the blocks the
// first tiles need come first.
//
// Why so: the first maker (warps each taking 32-key tasks off an atomic queue,
// 4-byte stores, a release per 4 KiB) moved V at 25-28 GB/s per SM on an H100,
// a quarter of what one or two SMs need to keep ahead of the tiles. Here 128
// KiB of V rows are in flight per SM at hd128, and each 16 KiB block costs one
// release; measured no faster, 23-25 GB/s per SM (docs/PERF_NOTES.md
// fa3-fp8-vt-maker), so what bounds a maker SM is neither the loads in flight
// nor the form of the stores.
#pragma once
#include <cstdint>

#include "fa3/fa3_fp8_kernel.cuh"

namespace fa::fa3 {

template <typename Traits>
struct VtMaker {
  static constexpr int kBlockBytes = Traits::kKVBytes;  // one block of V rows, and one of V^T
  static constexpr int kTeams = kBlockBytes <= 16 * 1024 ? 4 : 2;
  static constexpr int kRowStages = 200 * 1024 / kBlockBytes - kTeams;
  static constexpr int kThreads = 32 + 96 * kTeams;
  static constexpr int kOffOut = kRowStages * kBlockBytes;  // each team's V^T stage
  static constexpr int kOffBar = kOffOut + kTeams * kBlockBytes;
  static constexpr int kSmemBytes = kOffBar + 2 * kRowStages * 8 + 1024;  // + slack to align the base to 1024
  static_assert(kRowStages >= 2 && kSmemBytes <= 227 * 1024, "the maker's stages fit one SM");
};

template <typename Traits>
__global__ void __launch_bounds__(VtMaker<Traits>::kThreads, 1) vt_maker_kernel(const __grid_constant__ Fp8Args a) {
#if FA_SM90A_ENABLED
  using M = VtMaker<Traits>;
  using Fwd = Fa3Fp8Fwd<Traits, false>;
  constexpr int R = M::kRowStages;
  sm90::griddep_launch_dependents();  // the attention kernel may launch on the SMs left
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  sm90::MBarrier* full = reinterpret_cast<sm90::MBarrier*>(base + M::kOffBar);
  sm90::MBarrier* empty = full + R;
  if (threadIdx.x == 0) {
    for (int s = 0; s < R; ++s) full[s].init(1), empty[s].init(1);
    sm90::fence_barrier_init();
  }
  __syncthreads();
  const int pairs = a.batch * a.heads_kv, total = pairs * a.vt_blocks, warp = threadIdx.x / 32;
  if (warp == 0) {  // the loads: the k-th block of this maker block into stage k % R
    if (threadIdx.x == 0) {
      sm90::tma_prefetch_map(&a.tma_v);
      int k = 0;
      for (int t = blockIdx.x; t < total; t += gridDim.x, ++k) {
        const int s = k % R;
        empty[s].wait(((k / R) & 1) ^ 1);
        Fwd::load_vt_rows(a, vt_block_task(a, t, pairs), base + s * M::kBlockBytes, full[s]);
      }
    }
    return;
  }
  // Team `team` takes this maker block's k-th blocks for k = team (mod kTeams).
  const int team = (warp - 1) / 3, tw = (warp - 1) % 3;
  const bool issuer = tw == 0 && threadIdx.x % 32 == 0;
  const typename Fwd::TransposeLane lane(tw);
  const uint32_t sel_lo = Fwd::transpose_selector();
  uint8_t* out = base + M::kOffOut + team * M::kBlockBytes;
  Fp8VtTask prev{-1, 0};
  for (int k = team, t = blockIdx.x + team * gridDim.x; t < total; k += M::kTeams, t += M::kTeams * gridDim.x) {
    const int s = k % R;
    full[s].wait((k / R) & 1);
    Fwd::transpose_units(smem_addr(base + s * M::kBlockBytes), smem_addr(out), lane, tw, sel_lo);
    sm90::fence_proxy_async_smem();  // the V^T stage, visible to the TMA store
    sm90::named_barrier_sync(1 + team, 96);
    if (issuer) {
      empty[s].arrive();  // the team's reads of the rows are done
      const Fp8VtTask task = vt_block_task(a, t, pairs);
      Fwd::store_vt(a, task, out);
      sm90::bulk_commit();
      if (prev.pair >= 0) {
        sm90::bulk_wait<1>();  // the team's previous store is written
        vt_block_done(a, prev);
      }
      prev = task;
      sm90::bulk_wait_read<0>();  // this store has read the stage
    }
    sm90::named_barrier_sync(1 + team, 96);  // the stage may be written again
  }
  if (issuer && prev.pair >= 0) {
    sm90::bulk_wait<0>();
    vt_block_done(a, prev);
  }
#endif
}

}  // namespace fa::fa3
