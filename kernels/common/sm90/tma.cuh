// TMA (the bulk tensor copy engine): host-side tensor maps and the device-side
// load that completes on an mbarrier.
//
// The tensor map comes from the driver's cuTensorMapEncodeTiled, reached through
// the runtime's entry-point query so the binary does not link libcuda and still
// starts on a machine with no GPU driver (the query then fails and the launch
// returns that error).
#pragma once
#include <cstdint>

#include <cuda.h>  // CUtensorMap and its enums only: no libcuda symbol is referenced
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cuda/ptx>

namespace fa::sm90 {

// Tiles are loaded as 64-element (128-byte) wide panels with the 128-byte
// swizzle: the widest box inner extent that swizzle allows, and the layout
// wgmma's 128B-swizzle descriptors read without bank conflicts.
constexpr int kPanelElems = 64;
constexpr int kPanelBytes = 128;

// The driver's encoder, looked up once per process (the entry point is the same
// for every device). A function-local static is initialised exactly once even
// when several host threads ask at once (--devices runs one per GPU); a failed
// lookup is kept too: the driver does not change under a running process.
inline cudaError_t get_tensor_map_encoder(PFN_cuTensorMapEncodeTiled_v12000* fn) {
  struct Lookup {
    PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    cudaError_t status = cudaErrorUnknown;
  };
  static const Lookup lookup = [] {
    Lookup l;
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    l.status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (l.status == cudaSuccess && q != cudaDriverEntryPointSuccess) l.status = cudaErrorSymbolNotFound;
    if (l.status == cudaSuccess) l.fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    return l;
  }();
  *fn = lookup.fn;
  return lookup.fn ? cudaSuccess : lookup.status;
}

// A 4-D map over a BSHD tensor of 16-bit elements: dims (innermost first)
// head_dim, seqlen, heads, batch; strides in elements. The box is one panel of
// `box_rows` rows of one head of one batch. Rows past seqlen read as zeros
// (TMA's out-of-bounds fill), which is what ragged tiles need.
inline cudaError_t make_bshd_tensor_map(CUtensorMap* map, const void* base, bool is_bf16, int head_dim,
                                        int seqlen, int heads, int batch, int64_t row_stride,
                                        int64_t head_stride, int64_t batch_stride, int box_rows) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  cudaError_t err = get_tensor_map_encoder(&encode);
  if (err != cudaSuccess) return err;
  const cuuint64_t dims[4] = {cuuint64_t(head_dim), cuuint64_t(seqlen), cuuint64_t(heads), cuuint64_t(batch)};
  const cuuint64_t strides[3] = {cuuint64_t(row_stride) * 2, cuuint64_t(head_stride) * 2,
                                 cuuint64_t(batch_stride) * 2};  // bytes, dims 1..3
  const cuuint32_t box[4] = {cuuint32_t(kPanelElems), cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUresult r = encode(map, is_bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                      const_cast<void*>(base), dims, strides, box, elem_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

// Issue one 4-D tile load into shared memory; its bytes complete on `bar`.
__device__ __forceinline__ void tma_load_4d(void* smem_dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                            int c1, int c2, int c3) {
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem_dst, map, coords,
                                  bar);
}

// Pull the tensor map's descriptor into the cache ahead of the first load.
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

}  // namespace fa::sm90
