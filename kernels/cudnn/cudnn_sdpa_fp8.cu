// The FP8 forward's run-time side: Fp8Params to a plan's shape, the refusals
// made before cuDNN is asked, a plan per (device, shape) kept for the process
// (refusals with their reasons too), and the launch, which only fills the
// variant pack and executes. Its own handle per device, beside the 16-bit
// family's (plan_cache.cu); execution goes through the same execute().
// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/cudnn_sdpa_fp8.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cudnn/plan_cache.h"
#include "cudnn/sdpa_fp8_graph.h"

namespace fa::cudnn_sdpa_fp8 {
namespace {

using cudnn::Fp8SdpaShape;
using cudnn::SdpaPlan;

// cudnn-frontend's sdpa_fp8 node needs 9.1.0, and 9.1.1 for head_dim > 128.
constexpr size_t kMinVersion = 90100, kMinVersionHd256 = 90101;

struct Entry {
  std::optional<SdpaPlan> plan;
  std::string refusal;
};

struct State {
  std::mutex mu;
  std::map<int, std::unique_ptr<cudnn::Device>> devices;
  std::map<std::pair<int, Fp8SdpaShape>, std::unique_ptr<Entry>> plans;
};

State& state() {
  static State s;
  return s;
}

// The current device's handle, made on first use (caller holds state().mu).
// Devices before Hopper are refused here: cuDNN has no FP8 attention there.
cudnn::Device& current_device(int* id) {
  *id = -1;
  if (cudaGetDevice(id) != cudaSuccess) {
    cudaGetLastError();  // no device is not a sticky error
    *id = -1;
  }
  auto& slot = state().devices[*id];
  if (slot) return *slot;
  slot = std::make_unique<cudnn::Device>();
  if (*id < 0) {
    slot->refusal = "cudnn fp8: no CUDA device";
    return *slot;
  }
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, *id);
  if (major < 9) {
    slot->refusal = "cudnn fp8: cuDNN's FP8 attention needs compute capability 9.0 or later";
    return *slot;
  }
  const size_t v = cudnnGetVersion();
  if (v < kMinVersion) {
    slot->refusal = "cudnn fp8: cuDNN " + cudnn::version_string(v) + " loaded; the FP8 forward graph needs " +
                    cudnn::version_string(kMinVersion) + " or later";
    return *slot;
  }
  cudnnStatus_t st = cudnnCreate(&slot->handle);
  if (st != CUDNN_STATUS_SUCCESS) {
    slot->refusal = "cudnn fp8: " + cudnn::describe(st, "cudnnCreate");
    slot->handle = nullptr;
  }
  return *slot;
}

// Refusals that need no cuDNN call.
const char* shape_refusal(const Fp8Params& p) {
  if (p.head_dim % 8 != 0 || p.head_dim > 256) return "cudnn fp8: head_dim must be a multiple of 8 and at most 256";
  if (p.head_dim > 128 && cudnnGetVersion() < kMinVersionHd256)
    return "cudnn fp8: head_dim > 128 needs cuDNN 9.1.1 or later";
  if (p.causal && p.seqlen_q > p.seqlen_k)
    return "cudnn fp8: bottom-right causal needs seqlen_q <= seqlen_k (cuDNN cannot express rows that see no key)";
  if (p.heads_kv <= 0 || p.heads % p.heads_kv != 0) return "cudnn fp8: heads must be a multiple of heads_kv";
  // 16-byte aligned rows: e4m3 strides a multiple of 16 elements, O's of 16 bytes.
  for (int64_t s : {p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride, p.k_row_stride,
                    p.k_head_stride, p.v_batch_stride, p.v_row_stride, p.v_head_stride})
    if (s % 16 != 0) return "cudnn fp8: Q, K and V strides must be multiples of 16 elements (16-byte alignment)";
  const int64_t o_align = p.o_type == OType::bf16 ? 8 : 16;
  for (int64_t s : {p.o_batch_stride, p.o_row_stride, p.o_head_stride})
    if (s % o_align != 0) return "cudnn fp8: O strides must be 16-byte aligned";
  return nullptr;
}

Fp8SdpaShape shape_of(const Fp8Params& p) {
  Fp8SdpaShape s;
  s.batch = p.batch, s.heads = p.heads, s.heads_kv = p.heads_kv;
  s.seqlen_q = p.seqlen_q, s.seqlen_k = p.seqlen_k, s.head_dim = p.head_dim;
  auto put = [](int64_t* d, int64_t batch, int64_t head, int64_t row) { d[0] = batch, d[1] = head, d[2] = row; };
  put(s.q_stride, p.q_batch_stride, p.q_head_stride, p.q_row_stride);
  put(s.k_stride, p.k_batch_stride, p.k_head_stride, p.k_row_stride);
  put(s.v_stride, p.v_batch_stride, p.v_head_stride, p.v_row_stride);
  put(s.o_stride, p.o_batch_stride, p.o_head_stride, p.o_row_stride);
  s.o_type = p.o_type == OType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FP8_E4M3;
  s.causal = p.causal;
  return s;
}

// The plan for p, or nullptr with *why.
const SdpaPlan* plan_for(const Fp8Params& p, cudnn::Device** dev_out, const char** why) {
  std::lock_guard lock(state().mu);
  int id = -1;
  cudnn::Device& dev = current_device(&id);
  *dev_out = &dev;
  if (!dev.handle) {
    *why = dev.refusal.c_str();  // entries are never erased
    return nullptr;
  }
  if ((*why = shape_refusal(p))) return nullptr;
  auto& slot = state().plans[{id, shape_of(p)}];
  if (!slot) {
    slot = std::make_unique<Entry>();
    try {
      slot->plan = cudnn::build_sdpa_fp8_plan(dev.handle, shape_of(p));
    } catch (const cudnn::Failure& f) {
      slot->refusal = "cudnn fp8: " + f.what;
    }
  }
  if (!slot->plan) {
    *why = slot->refusal.c_str();
    return nullptr;
  }
  return &*slot->plan;
}

// By-value scalars: cuDNN copies them into the kernel's arguments during execute.
struct Scalars {
  float attn_scale = 0.f, lowest = std::numeric_limits<float>::lowest(), one = 1.f;
  int32_t seqlen_k = 0, seqlen_q = 0;
};

void* pointer_for(int64_t uid, const Fp8Params& p, Scalars& v) {
  switch (uid) {
    case cudnn::kFp8UidQ: return const_cast<void*>(p.q);
    case cudnn::kFp8UidK: return const_cast<void*>(p.k);
    case cudnn::kFp8UidV: return const_cast<void*>(p.v);
    case cudnn::kFp8UidO: return p.o;
    case cudnn::kFp8UidStats: return p.lse;
    case cudnn::kFp8UidAttnScale: return &v.attn_scale;
    case cudnn::kFp8UidNegInf: return &v.lowest;
    case cudnn::kFp8UidDescaleQ: return const_cast<float*>(p.descale_q);
    case cudnn::kFp8UidDescaleK: return const_cast<float*>(p.descale_k);
    case cudnn::kFp8UidDescaleV: return const_cast<float*>(p.descale_v);
    case cudnn::kFp8UidDescaleS: return const_cast<float*>(p.descale_s);
    case cudnn::kFp8UidScaleS: return const_cast<float*>(p.scale_s);
    // bf16 O: the graph's scale_o is the by-value 1; e4m3 O: the caller's device float.
    case cudnn::kFp8UidScaleO: return p.o_type == OType::bf16 ? static_cast<void*>(&v.one) : const_cast<float*>(p.scale_o);
    case cudnn::kFp8UidAmaxS: return p.amax_s;
    case cudnn::kFp8UidAmaxO: return p.amax_o;
    case cudnn::kUidSeqlenK: return &v.seqlen_k;
    case cudnn::kUidSeqlenQ: return &v.seqlen_q;
  }
  return nullptr;
}

std::string label(const Fp8Params& p) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "cudnn fp8 fwd launch (b%d h%d/%d q%d k%d d%d%s, O %s)", p.batch, p.heads,
                p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, p.causal ? " causal" : "",
                p.o_type == OType::bf16 ? "bf16" : "e4m3");
  return buf;
}

}  // namespace

void set_contiguous_strides(Fp8Params& p) {
  const int64_t d = p.head_dim;
  p.q_head_stride = d, p.q_row_stride = p.heads * d, p.q_batch_stride = int64_t(p.seqlen_q) * p.heads * d;
  p.k_head_stride = d, p.k_row_stride = p.heads_kv * d, p.k_batch_stride = int64_t(p.seqlen_k) * p.heads_kv * d;
  p.v_head_stride = p.k_head_stride, p.v_row_stride = p.k_row_stride, p.v_batch_stride = p.k_batch_stride;
  p.o_head_stride = p.q_head_stride, p.o_row_stride = p.q_row_stride, p.o_batch_stride = p.q_batch_stride;
}

const char* unsupported(const Fp8Params& p) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  return plan_for(p, &dev, &why) ? nullptr : why;
}

int64_t workspace_bytes(const Fp8Params& p) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  const SdpaPlan* plan = plan_for(p, &dev, &why);
  return plan ? plan->workspace_bytes : 0;
}

bool plan_info(const Fp8Params& p, PlanInfo* out) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  const SdpaPlan* plan = plan_for(p, &dev, &why);
  if (!plan) return false;
  out->engine_index = plan->engine_index;
  out->workspace_bytes = plan->workspace_bytes;
  return true;
}

int launch(const Fp8Params& p, void* stream) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  const SdpaPlan* plan = plan_for(p, &dev, &why);
  if (plan == nullptr) {
    std::fprintf(stderr, "%s refused: %s\n", label(p).c_str(), why);
    return int(cudaErrorNotSupported);
  }
  if (plan->workspace_bytes > 0 && (p.workspace == nullptr || p.workspace_bytes < plan->workspace_bytes)) {
    std::fprintf(stderr, "%s: plan needs %lld workspace bytes, params give %lld\n", label(p).c_str(),
                 (long long)plan->workspace_bytes, (long long)p.workspace_bytes);
    return int(cudaErrorInvalidValue);
  }
  if (!p.q || !p.k || !p.v || !p.o || !p.lse || !p.descale_q || !p.descale_k || !p.descale_v || !p.descale_s ||
      !p.scale_s || !p.amax_s || !p.amax_o || (p.o_type == OType::e4m3 && !p.scale_o)) {
    std::fprintf(stderr, "%s: a buffer or a scale factor is missing\n", label(p).c_str());
    return int(cudaErrorInvalidValue);
  }
  Scalars v;
  v.attn_scale = p.softmax_scale, v.seqlen_k = p.seqlen_k, v.seqlen_q = p.seqlen_q;
  std::vector<void*> pointers;
  for (int64_t uid : plan->uids) pointers.push_back(pointer_for(uid, p, v));
  std::string error;
  const int rc = cudnn::execute(*dev, *plan, pointers, p.workspace, stream, &error);
  if (rc != int(cudaSuccess)) std::fprintf(stderr, "%s: %s\n", label(p).c_str(), error.c_str());
  return rc;
}

}  // namespace fa::cudnn_sdpa_fp8
#endif  // FA_BENCH_HAVE_CUDNN
