// Host side of the FP8 (e4m3) FA3 forward: its parameters, the V^T pre-pass
// launch, the attention launch on a given tile, and what it refuses (the default
// tiles: fa3_fp8_defaults.h). The registry's entry (fa3_fp8_entry.cuh) launches
// its own tile; fa3_fp8_variants.cuh picks one at run time for the standalone checks.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "common/attn_params.h"
#include "fa3/fa3_fp8_defaults.h"
#include "fa3/fa3_fp8_kernel.cuh"
#include "fa3/fa3_fp8_split.h"
#include "fa3/fa3_fp8_vt_maker.cuh"
#include "fa3/fa3_fp8_vt_tasks.h"
#include "fa3/fa3_fwd.cuh"  // current_device_sm, aligned16

namespace fa {

struct Fp8FwdParams {
  const uint8_t* q = nullptr;  // e4m3 codes, BSHD [batch, seqlen_q, heads, head_dim]
  const uint8_t* k = nullptr;  // [batch, seqlen_k, heads_kv, head_dim]
  const uint8_t* v = nullptr;  // [batch, seqlen_k, heads_kv, head_dim]
  void* o = nullptr;           // bf16, BSHD like Q
  float* lse = nullptr;        // [batch, heads, seqlen_q], natural log
  uint8_t* vt = nullptr;       // workspace of fp8_vt_bytes(): V^T, written by transpose_v

  int batch = 0, heads = 0, heads_kv = 0, seqlen_q = 0, seqlen_k = 0, head_dim = 0;
  // Element (= byte for Q, K, V) strides; head_dim's stride is 1.
  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;

  // Device pointers; strides 0 = one descale per tensor (fa3_fp8_args.cuh);
  // block_rows: sequence rows per descale, 0 = none (per tensor or per head).
  fa3::Fp8Descale q_descale, k_descale, v_descale;
  int q_block_rows = 0, k_block_rows = 0, v_block_rows = 0;
  float softmax_scale = 0.f;  // of the dequantized Q K^T, typically 1/sqrt(head_dim)
  bool causal = false;        // bottom-right aligned, as the bf16 kernel
  int num_sms = 0;            // persistent grid size; 0 = ask the device
  // Workspace of fp8_split_bytes() for the split tail, zeroed before its first
  // use (the kernel leaves its counts at 0); nullptr: no split.
  void* split_ws = nullptr;
  // Words of fp8_vt_sync_bytes(): the attention kernel makes V^T itself (in
  // vt), its producer's idle warps in the queue's order (fa3_fp8_vt_tasks.h), and no
  // pre-pass runs; zeroed before each launch by one memset that clears the
  // split counts too, so split_ws, where set, must follow these words directly
  // (fp8_vt_sync_reset refuses it otherwise). nullptr, or a tile without
  // Fa3Fp8Traits::kShareVt: the pre-pass.
  void* vt_sync = nullptr;
  // With vt_sync, on a tile whose producer warps do not make V^T
  // (Fa3Fp8Traits::kVtWarps false): the blocks of vt_maker_kernel launched
  // before the attention kernel, which then runs on num_sms of its own (the
  // caller leaves these SMs out of it).
  int vt_maker_blocks = 0;

  void set_contiguous_strides() {
    q_head_stride = head_dim, q_row_stride = int64_t(heads) * head_dim, q_batch_stride = q_row_stride * seqlen_q;
    o_head_stride = q_head_stride, o_row_stride = q_row_stride, o_batch_stride = q_batch_stride;
    k_head_stride = head_dim, k_row_stride = int64_t(heads_kv) * head_dim, k_batch_stride = k_row_stride * seqlen_k;
    v_head_stride = k_head_stride, v_row_stride = k_row_stride, v_batch_stride = k_batch_stride;
  }
};

// Bytes of the V^T workspace: [batch, heads_kv, head_dim, seqlen_k rounded up to 64].
inline int64_t fp8_vt_bytes(const Fp8FwdParams& p) {
  return int64_t(p.batch) * p.heads_kv * p.head_dim * fp8_vt_seqlen(p.seqlen_k);
}

// The device's SM count, or p.num_sms where set: the persistent grid's bound.
inline int fp8_grid_sms(const Fp8FwdParams& p) {
  int n = p.num_sms, dev = 0;
  if (n <= 0 && (cudaGetDevice(&dev) != cudaSuccess ||
                 cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess))
    n = 0;
  return n;
}

// Whether any tensor has descales per block of rows (the kernel's kBlocks instance).
inline bool fp8_block_scaled(const Fp8FwdParams& p) { return (p.q_block_rows | p.k_block_rows | p.v_block_rows) != 0; }

// p's split tail on a block_m x block_n tile (fa3_fp8_split.h).
inline Fp8SplitPlan fp8_split_plan(const Fp8FwdParams& p, int block_m, int block_n) {
  const bool block_scaled = fp8_block_scaled(p);
  const int grid = p.causal || block_scaled ? 0 : fp8_grid_sms(p);  // no split there: the device not asked
  return fp8_split_plan(p.batch, p.heads, p.seqlen_q, p.seqlen_k, p.causal, block_scaled, grid, block_m, block_n);
}

inline int64_t fp8_split_bytes(const Fp8FwdParams& p, int block_m, int block_n) {
  return fp8_split_bytes(fp8_split_plan(p, block_m, block_n), block_m, p.head_dim);
}

// Key blocks of block_n keys in each padded V^T row of p.
inline int fp8_vt_blocks(const Fp8FwdParams& p, int block_n) {
  return (fp8_vt_seqlen(p.seqlen_k) + block_n - 1) / block_n;
}

// Bytes of p's V^T synchronisation words on a tile of block_n keys per block.
inline int64_t fp8_vt_sync_bytes(const Fp8FwdParams& p, int block_n) {
  return fp8_vt_sync_bytes(p.batch * p.heads_kv, fp8_vt_blocks(p, block_n));
}

// Zeroes p.vt_sync's words and the split tail's counts, which follow them, in
// one memset before an attention launch that makes its own V^T (one launch
// fewer in the timed span than a memset each). cudaErrorInvalidValue where the
// split workspace is set elsewhere: its counts would stay stale.
inline cudaError_t fp8_vt_sync_reset(const Fp8FwdParams& p, int block_m, int block_n, cudaStream_t stream) {
  const int64_t sync = fp8_vt_sync_bytes(p, block_n);
  const Fp8SplitPlan sp = p.split_ws ? fp8_split_plan(p, block_m, block_n) : Fp8SplitPlan{};
  const int64_t counts = sp.k > 1 ? fp8_split_counts_bytes(sp, block_m) : 0;
  if (counts > 0 && static_cast<char*>(p.vt_sync) + sync != p.split_ws) return cudaErrorInvalidValue;
  return cudaMemsetAsync(p.vt_sync, 0, size_t(sync + counts), stream);
}

// Why p cannot run on a tile with block_n keys per K/V block, or nullptr.
// Descales per block of rows: each consumer warpgroup reads Q's for its own 64
// rows, and K's and V's are read once per K/V block.
inline const char* fa3_fp8_unsupported(const Fp8FwdParams& p, int block_n) {
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) return "fa3 fp8: head_dim must be 64, 128 or 256";
  if (p.q_block_rows % 64 != 0) return "fa3 fp8: Q's descale blocks must hold whole 64-row slices of a tile";
  if (p.k_block_rows % block_n != 0 || p.v_block_rows % block_n != 0)
    return "fa3 fp8: K and V descale blocks must hold whole K/V blocks of the tile (128 keys; 256 at head_dim 64)";
  if (p.seqlen_q < 1 || p.seqlen_k < 1) return "fa3 fp8: seqlen_q and seqlen_k must be >= 1";
  if (p.heads_kv < 1 || p.heads % p.heads_kv != 0) return "fa3 fp8: heads must be a multiple of heads_kv";
  if (!p.q_descale.ptr || !p.k_descale.ptr || !p.v_descale.ptr) return "fa3 fp8: descale pointers missing";
  if (!p.vt) return "fa3 fp8: no V^T workspace";
  // TMA: 16-byte aligned bases and byte strides; the pre-pass reads V in 16-byte chunks.
  if (!fa3::aligned16(p.q) || !fa3::aligned16(p.k) || !fa3::aligned16(p.v) || !fa3::aligned16(p.vt))
    return "fa3 fp8: Q, K, V, V^T must be 16-byte aligned";
  const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride, p.k_row_stride,
                             p.k_head_stride,  p.v_batch_stride, p.v_row_stride, p.v_head_stride};
  for (int64_t s : strides)
    if (s % 16 != 0) return "fa3 fp8: Q/K/V strides must be multiples of 16 elements";
  if (p.o_row_stride % 8 || p.o_head_stride % 8 || p.o_batch_stride % 8 || !fa3::aligned16(p.o))
    return "fa3 fp8: O must allow 16-byte stores (16-byte aligned, strides multiples of 8 elements)";
  const int sm = fa3::current_device_sm();
  if (sm < 0) return "fa3 fp8: no CUDA device";
  if (sm != 90) return "fa3 fp8: needs an sm_90 (Hopper) GPU";
  return nullptr;
}

// V [b, seqlen_k, h_kv, d] -> p.vt [b, h_kv, d, fp8_vt_seqlen(seqlen_k)], keys in
// e4m3_key_order, zeros past seqlen_k (fa3_fp8_kernel.cuh).
// zero, n_zero: words its first block sets to 0 on the way (the split tail's counts).
inline cudaError_t transpose_v(const Fp8FwdParams& p, cudaStream_t stream, unsigned* zero = nullptr, int n_zero = 0) {
  const dim3 grid(fp8_vt_seqlen(p.seqlen_k) / kFp8VtKeys, p.heads_kv, p.batch);
  fa3::transpose_v_kernel<kFp8VtKeys><<<grid, fa3::kVtThreads, 0, stream>>>(
      p.v, p.vt, p.seqlen_k, fp8_vt_seqlen(p.seqlen_k), p.heads_kv, p.head_dim, p.v_batch_stride, p.v_row_stride,
      p.v_head_stride, zero, n_zero);
  return cudaGetLastError();
}

// transpose_v, zeroing the split counts of a block_m x block_n tile where p splits.
inline cudaError_t transpose_v_for(const Fp8FwdParams& p, int block_m, int block_n, cudaStream_t stream) {
  const Fp8SplitPlan sp = p.split_ws ? fp8_split_plan(p, block_m, block_n) : Fp8SplitPlan{};
  return transpose_v(p, stream, static_cast<unsigned*>(p.split_ws), fp8_split_counts(sp, block_m));
}

// The attention kernel alone on Traits' tile; reads the V^T that transpose_v
// wrote, or (Traits::kTransposeV) V itself. after_pass: transpose_v is the
// kernel before it in `stream`, and the attention kernel may start while it
// ends (griddep.cuh; its producer waits for it before the first V^T load).
// Where V^T is shared and the producer warps do not make it (kShareVt, not
// kVtWarps, p.vt_sync set), vt_maker_kernel is launched first on
// p.vt_maker_blocks SMs and the attention kernel as its dependent.
template <typename Traits>
cudaError_t fa3_fp8_attention_tile(const Fp8FwdParams& p, cudaStream_t stream, bool after_pass = false) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, HeadDim = Traits::kHeadDim;
  if (p.head_dim != HeadDim || p.q_block_rows % 64 || p.k_block_rows % BN || p.v_block_rows % BN)
    return cudaErrorInvalidValue;  // fa3_fp8_unsupported says why
  fa3::Fp8Args a{};
  cudaError_t err;
  const uint64_t hd = uint64_t(HeadDim);
  err = sm90::make_u8_tensor_map(&a.tma_q, p.q, {hd, uint64_t(p.seqlen_q), uint64_t(p.heads), uint64_t(p.batch)},
                                 {uint64_t(p.q_row_stride), uint64_t(p.q_head_stride), uint64_t(p.q_batch_stride)},
                                 Traits::kQKPanelW, BM);
  if (err != cudaSuccess) return err;
  err = sm90::make_u8_tensor_map(&a.tma_k, p.k, {hd, uint64_t(p.seqlen_k), uint64_t(p.heads_kv), uint64_t(p.batch)},
                                 {uint64_t(p.k_row_stride), uint64_t(p.k_head_stride), uint64_t(p.k_batch_stride)},
                                 Traits::kQKPanelW, BN);
  if (err != cudaSuccess) return err;
  // V's rows, as K's: read by the kernel that transposes V itself, or where V^T is
  // shared, by whoever makes it (the producer warps or the V^T maker kernel).
  constexpr bool kMaker = Traits::kShareVt && !Traits::kVtWarps;
  if (Traits::kTransposeV || (Traits::kShareVt && p.vt_sync)) {
    err = sm90::make_u8_tensor_map(&a.tma_v, p.v, {hd, uint64_t(p.seqlen_k), uint64_t(p.heads_kv), uint64_t(p.batch)},
                                   {uint64_t(p.v_row_stride), uint64_t(p.v_head_stride), uint64_t(p.v_batch_stride)},
                                   Traits::kQKPanelW, BN);
    if (err != cudaSuccess) return err;
  }
  if constexpr (!Traits::kTransposeV) {  // V^T, loaded by the kernel (and stored by the maker)
    const uint64_t svt = uint64_t(fp8_vt_seqlen(p.seqlen_k));
    err = sm90::make_u8_tensor_map(&a.tma_vt, p.vt, {svt, hd, uint64_t(p.heads_kv), uint64_t(p.batch)},
                                   {svt, svt * hd, svt * hd * uint64_t(p.heads_kv)}, Traits::kVPanelW, HeadDim);
    if (err != cudaSuccess) return err;
  }
  if constexpr (Traits::kTmaStoreO) {
    err = sm90::make_bshd_tensor_map(&a.tma_o, p.o, /*is_bf16=*/true, HeadDim, p.seqlen_q, p.heads, p.batch,
                                     p.o_row_stride, p.o_head_stride, p.o_batch_stride, 64);
    if (err != cudaSuccess) return err;
  }
  a.o = p.o;
  a.lse = p.lse;
  a.batch = p.batch;
  a.heads = p.heads;
  a.heads_kv = p.heads_kv;
  a.seqlen_q = p.seqlen_q;
  a.seqlen_k = p.seqlen_k;
  a.o_batch_stride = p.o_batch_stride;
  a.o_row_stride = p.o_row_stride;
  a.o_head_stride = p.o_head_stride;
  a.softmax_scale = p.softmax_scale;
  a.causal = p.causal ? 1 : 0;
  a.q_descale = p.q_descale;
  a.k_descale = p.k_descale;
  a.v_descale = p.v_descale;
  a.q_block_rows = p.q_block_rows, a.k_block_rows = p.k_block_rows, a.v_block_rows = p.v_block_rows;

  // The scheduler plans from AttnParams. Its causal L2 grouping counts 2-byte
  // K/V, so a group may hold half the heads whose e4m3 K/V would fill half the L2.
  // Counting 1 byte measured slower where it changes the order: at hd256 causal
  // 512 it gives groups of 132 heads instead of each head's tiles together, 19 %
  // more attention time on an H100 (docs/PERF_NOTES.md fa3-fp8-causal-l2-bytes).
  AttnParams ap;
  ap.batch = p.batch, ap.heads = p.heads, ap.heads_kv = p.heads_kv;
  ap.seqlen_q = p.seqlen_q, ap.seqlen_k = p.seqlen_k, ap.head_dim = HeadDim;
  ap.causal = p.causal, ap.num_sms = p.num_sms;
  // Causal: the remainder rows of seqlen_q in the first, shortest tile instead of
  // the last, longest one (fa3_causal_balance.h, causal_row_shift).
  a.row_shift = fa3::causal_row_shift(p.causal, p.seqlen_q, BM);
  int grid = 0;
  err = Traits::Scheduler::plan(ap, BM, BN, HeadDim, &a.schedule, &grid, a.row_shift);
  if (err != cudaSuccess) return err;

  // Descales per block of rows have their own instance (fa3_fp8_kernel.cuh).
  const bool blocks = fp8_block_scaled(p);
  // The split tail, where a workspace is given (fp8_split_plan says where it splits).
  a.num_items = a.split_from = a.schedule.num_tiles;
  a.split_k = 1;
  a.split_partials = nullptr;
  a.split_counts = nullptr;
  if (fa3::kPersistentGrid && p.split_ws) {  // the plan assumes one block per SM walking the list
    const Fp8SplitPlan sp = fp8_split_plan(p, BM, BN);
    if (sp.k > 1) {
      a.num_items = sp.num_items, a.split_from = sp.split_from, a.split_k = sp.k;
      a.split_counts = static_cast<unsigned*>(p.split_ws);
      a.split_partials = reinterpret_cast<float*>(static_cast<char*>(p.split_ws) + fp8_split_counts_bytes(sp, BM));
      const int sms = fp8_grid_sms(p);
      grid = sp.num_items < sms ? sp.num_items : sms;
    }
  }
  // V^T made by the kernel: the queue's order follows the rounds of the list.
  a.vt_sync = nullptr;
  if (Traits::kShareVt && p.vt_sync) {
    a.vt_sync = static_cast<unsigned*>(p.vt_sync);
    a.vt_blocks = fp8_vt_blocks(p, BN);
    const int pairs = p.batch * p.heads_kv;
    a.vt_group = fp8_vt_task_group(p.causal, grid, a.schedule.num_m_blocks, a.schedule.group_bh,
                                   p.heads / p.heads_kv, pairs);
    a.vt_tasks = pairs * a.vt_blocks;
  }
  auto kernel = blocks ? fa3::fa3_fp8_fwd_kernel<Traits, true> : fa3::fa3_fp8_fwd_kernel<Traits, false>;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Traits::kSmemBytes);
  if (err != cudaSuccess) return err;
  if constexpr (kMaker) {
    if (a.vt_sync) {  // V^T made beside the kernel (fa3_fp8_vt_maker.cuh)
      if (p.vt_maker_blocks < 1) return cudaErrorInvalidValue;
      using Maker = fa3::VtMaker<Traits>;
      auto maker = fa3::vt_maker_kernel<Traits>;
      err = cudaFuncSetAttribute(maker, cudaFuncAttributeMaxDynamicSharedMemorySize, Maker::kSmemBytes);
      if (err != cudaSuccess) return err;
      maker<<<p.vt_maker_blocks, Maker::kThreads, Maker::kSmemBytes, stream>>>(a);
      err = cudaGetLastError();
      if (err != cudaSuccess) return err;
      after_pass = true;
    }
  }
  if (after_pass) return sm90::launch_after_primary(kernel, grid, Traits::kThreads, Traits::kSmemBytes, stream, a);
  kernel<<<grid, Traits::kThreads, Traits::kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

// The whole forward on Traits' tile: the V^T pre-pass, or the zeroing of the
// words by which the kernel shares its own V^T (p.vt_sync, where
// Traits::kShareVt), or nothing (the kernel transposes V in shared memory);
// then attention.
template <typename Traits>
cudaError_t fa3_fp8_fwd_tile(const Fp8FwdParams& p, cudaStream_t stream) {
  if constexpr (Traits::kTransposeV) {
    return fa3_fp8_attention_tile<Traits>(p, stream);
  } else {
    if (Traits::kShareVt && p.vt_sync) {
      const cudaError_t err = fp8_vt_sync_reset(p, Traits::kBlockM, Traits::kBlockN, stream);
      return err != cudaSuccess ? err : fa3_fp8_attention_tile<Traits>(p, stream);
    }
    const cudaError_t err = transpose_v_for(p, Traits::kBlockM, Traits::kBlockN, stream);
    return err != cudaSuccess ? err : fa3_fp8_attention_tile<Traits>(p, stream, /*after_pass=*/true);
  }
}

}  // namespace fa
