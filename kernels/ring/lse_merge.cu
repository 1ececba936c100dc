#include "ring/lse_merge.h"

#include <cuda_bf16.h>

#include "ring/lse_merge_math.h"

namespace fa::ring {

namespace {

constexpr int kWarps = 8;

// One warp per (batch, row, head): the row's LSE pair is read once, then the
// warp walks head_dim 4 elements per lane (16-byte float loads, 8-byte bf16).
__global__ void __launch_bounds__(kWarps * 32) lse_merge_kernel(const MergeArgs a) {
  const int64_t item = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int64_t per_batch = a.rows * a.heads;
  if (item >= per_batch * a.batch) return;
  const int b = int(item / per_batch);
  const int64_t row = a.rows_begin + (item % per_batch) / a.heads;
  const int h = int(item % a.heads);

  const int64_t o_off = ((int64_t(b) * a.seqlen + row) * a.heads + h) * a.head_dim;
  const int64_t lse_off = (int64_t(b) * a.heads + h) * a.seqlen + row;
  const bool has_part = row >= a.part_begin && row < a.part_begin + a.part_rows;
  const float lse_acc = a.first ? -INFINITY : a.lse_acc[lse_off];
  float lse_part = -INFINITY;
  if (has_part) {
    lse_part = a.lse_part[(int64_t(b) * a.heads + h) * a.part_rows + (row - a.part_begin)];
    if (a.negate_part_lse) lse_part = -lse_part;
  }
  const MergeWeights w = merge_weights(lse_acc, lse_part);

  const auto* part = static_cast<const __nv_bfloat16*>(a.o_part);
  auto* out = static_cast<__nv_bfloat16*>(a.o_out);
  for (int c = lane * 4; c < a.head_dim; c += 32 * 4) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (!a.first) acc = *reinterpret_cast<const float4*>(a.o_acc + o_off + c);
    float4 o;
    if (has_part) {
      const uint2 raw = *reinterpret_cast<const uint2*>(part + o_off + c);
      const float2 p01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
      const float2 p23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
      o = make_float4(w.w_a * acc.x + w.w_b * p01.x, w.w_a * acc.y + w.w_b * p01.y,
                      w.w_a * acc.z + w.w_b * p23.x, w.w_a * acc.w + w.w_b * p23.y);
    } else {
      o = acc;  // no partial this step: the running value stands (w_a is 1)
    }
    if (out != nullptr) {
      const __nv_bfloat162 o01 = __floats2bfloat162_rn(o.x, o.y), o23 = __floats2bfloat162_rn(o.z, o.w);
      uint2 raw;
      raw.x = *reinterpret_cast<const uint32_t*>(&o01);
      raw.y = *reinterpret_cast<const uint32_t*>(&o23);
      *reinterpret_cast<uint2*>(out + o_off + c) = raw;
    } else {
      *reinterpret_cast<float4*>(a.o_acc + o_off + c) = o;
    }
  }
  if (lane == 0) {
    const float lse = has_part ? w.lse : lse_acc;
    if (a.lse_out != nullptr)
      a.lse_out[lse_off] = lse;
    else
      a.lse_acc[lse_off] = lse;
  }
}

}  // namespace

cudaError_t launch_lse_merge(const MergeArgs& a, cudaStream_t stream) {
  if (a.head_dim % 4 != 0) return cudaErrorInvalidValue;
  const int64_t items = int64_t(a.batch) * a.rows * a.heads;
  if (items == 0) return cudaSuccess;
  const int64_t blocks = (items + kWarps - 1) / kWarps;
  lse_merge_kernel<<<unsigned(blocks), kWarps * 32, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace fa::ring
