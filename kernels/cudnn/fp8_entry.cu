// cuDNN's FP8 forward behind the registry's entry points (fp8_entry.h). Host
// code but for the device block that holds the graph's P factors and amax
// outputs (kept out of the launch: nothing but cuDNN's kernel is enqueued).
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/fp8_entry.h"

#include <optional>

#include <cuda_runtime.h>

#include "common/per_device.h"
#include "cudnn/cudnn_sdpa_fp8.h"

namespace fa::cudnn_fp8_entry {
namespace {

// The graph's scalars, one block per device (a module's globals are per
// context), written when the module loads: the P factors never change, and
// the amax outputs are not read by fa-bench (cuDNN may fold each launch's
// maxima into what is there; cudnn_fp8_check, which reports them, keeps its own).
// A one-thread kernel that wrote them before every launch sat inside the timed
// region and put a microsecond or so into the peer's time.
enum Scalar { kAmaxS, kAmaxO, kScaleSIdx, kDescaleS, kScalarCount };
__device__ float g_scalars[kScalarCount] = {0.f, 0.f, kScaleS, 1.f / kScaleS};

bool per_tensor(const DescaleView& d) { return d.batch_stride == 0 && d.head_stride == 0 && d.block_rows == 0; }

// p in cudnn_sdpa_fp8's terms; the scalars' pointers are set by launch
// (refusals and workspace queries need none).
cudnn_sdpa_fp8::Fp8Params fp8_params(const AttnParams& p) {
  cudnn_sdpa_fp8::Fp8Params f;
  f.q = p.q, f.k = p.k, f.v = p.v, f.o = p.o, f.lse = p.lse;
  f.descale_q = p.q_descale.ptr, f.descale_k = p.k_descale.ptr, f.descale_v = p.v_descale.ptr;
  f.scale_o = p.o_scale;
  f.workspace = p.workspace;
  f.workspace_bytes = p.workspace_bytes;
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
  return cudnn_sdpa_fp8::workspace_bytes(fp8_params(p));
}

const char* unsupported(const AttnParams& p) {
  if (const char* why = settings_refusal(p)) return why;
  return cudnn_sdpa_fp8::unsupported(fp8_params(p));
}

int launch(const AttnParams& p, void* stream) {
  if (settings_refusal(p)) return int(cudaErrorNotSupported);
  if (!p.o_scale || !p.q_descale.ptr || !p.k_descale.ptr || !p.v_descale.ptr) return int(cudaErrorInvalidValue);
  // The current device's block: a host query, nothing enqueued, asked once per device.
  int dev = 0;
  if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return int(e);
  static PerDevice<void*> blocks;
  cudaError_t err = cudaSuccess;
  const std::optional<void*> block = blocks.get(dev, [&]() -> std::optional<void*> {
    void* b = nullptr;
    err = cudaGetSymbolAddress(&b, g_scalars);
    return err == cudaSuccess ? std::optional<void*>(b) : std::nullopt;
  });
  if (!block) return int(err);
  void* scalars = *block;
  cudnn_sdpa_fp8::Fp8Params f = fp8_params(p);
  float* s = static_cast<float*>(scalars);
  f.amax_s = s + kAmaxS, f.amax_o = s + kAmaxO, f.scale_s = s + kScaleSIdx, f.descale_s = s + kDescaleS;
  return cudnn_sdpa_fp8::launch(f, static_cast<cudaStream_t>(stream));
}

}  // namespace fa::cudnn_fp8_entry
#endif  // FA_BENCH_HAVE_CUDNN
