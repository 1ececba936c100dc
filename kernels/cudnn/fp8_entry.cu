// cuDNN's FP8 forward behind the registry's entry points (fp8_entry.h). Host
// code but for one single-thread kernel that writes the graph's factors and
// zeroes its amax outputs on the stream, so a launch needs no host copy that
// could wait for the device inside a timed region.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/fp8_entry.h"

#include <cuda_runtime.h>

#include "cudnn/cudnn_sdpa_fp8.h"

namespace fa::cudnn_fp8_entry {
namespace {

// The scalars block at the workspace's start, in this order.
enum Scalar { kAmaxS, kAmaxO, kScaleSIdx, kDescaleS, kScalarCount };
static_assert(kScalarCount * sizeof(float) <= kScalarBytes);

// The amax outputs start from 0 at every launch: cuDNN's FP8 kernels may fold
// their maxima into what is there (FP8.md), and a stale value would outlive
// the launch that made it.
__global__ void write_scalars(float* s) {
  s[kAmaxS] = 0.f;
  s[kAmaxO] = 0.f;
  s[kScaleSIdx] = kScaleS;
  s[kDescaleS] = 1.f / kScaleS;
}

bool per_tensor(const DescaleView& d) { return d.batch_stride == 0 && d.head_stride == 0 && d.block_rows == 0; }

// p in cudnn_sdpa_fp8's terms; the factor pointers point into the workspace
// when there is one (refusals and workspace queries have none and need none).
cudnn_sdpa_fp8::Fp8Params fp8_params(const AttnParams& p) {
  cudnn_sdpa_fp8::Fp8Params f;
  f.q = p.q, f.k = p.k, f.v = p.v, f.o = p.o, f.lse = p.lse;
  f.descale_q = p.q_descale.ptr, f.descale_k = p.k_descale.ptr, f.descale_v = p.v_descale.ptr;
  f.scale_o = p.o_scale;
  if (p.workspace) {
    float* s = static_cast<float*>(p.workspace);
    f.amax_s = s + kAmaxS, f.amax_o = s + kAmaxO, f.scale_s = s + kScaleSIdx, f.descale_s = s + kDescaleS;
    f.workspace = static_cast<char*>(p.workspace) + kScalarBytes;
    f.workspace_bytes = p.workspace_bytes - kScalarBytes;
  }
  copy_extents_and_strides(p, f);
  f.softmax_scale = p.softmax_scale;
  f.causal = p.causal;
  f.o_type = cudnn_sdpa_fp8::OType::e4m3;
  return f;
}

}  // namespace

const char* settings_refusal(const AttnParams& p) {
  if (p.dtype != ElemType::e4m3) return "cudnn fp8: this instantiation is for e4m3 inputs";
  if (p.o_dtype != ElemType::e4m3)
    return "cudnn fp8: writes O in e4m3 only (cuDNN's FP8 forward on Hopper refuses a 16-bit O)";
  if (!per_tensor(p.q_descale) || !per_tensor(p.k_descale) || !per_tensor(p.v_descale))
    return "cudnn fp8: cuDNN's FP8 graph takes one descale per tensor ([1,1,1,1]), not one per (batch, head) "
           "or per block of rows (--fp8-scaling tensor only)";
  return nullptr;
}

int64_t workspace_bytes(const AttnParams& p) {
  if (settings_refusal(p)) return 0;
  return kScalarBytes + cudnn_sdpa_fp8::workspace_bytes(fp8_params(p));
}

const char* unsupported(const AttnParams& p) {
  if (const char* why = settings_refusal(p)) return why;
  return cudnn_sdpa_fp8::unsupported(fp8_params(p));
}

int launch(const AttnParams& p, void* stream) {
  if (settings_refusal(p)) return int(cudaErrorNotSupported);
  if (!p.workspace || p.workspace_bytes < kScalarBytes || !p.o_scale || !p.q_descale.ptr || !p.k_descale.ptr ||
      !p.v_descale.ptr)
    return int(cudaErrorInvalidValue);
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  write_scalars<<<1, 1, 0, s>>>(static_cast<float*>(p.workspace));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return int(e);
  return cudnn_sdpa_fp8::launch(fp8_params(p), s);
}

}  // namespace fa::cudnn_fp8_entry
#endif  // FA_BENCH_HAVE_CUDNN
