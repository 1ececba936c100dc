// The cudnn family's run-time side: one cuDNN handle per device, one plan per
// problem shape (built on first sight, kept for the process), and the launch,
// which only fills a variant pack and calls cudnnBackendExecute.
// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/cudnn_sdpa.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cudnn/sdpa_graph.h"

namespace fa::cudnn_sdpa {
namespace {

using cudnn::Failure;
using cudnn::SdpaPlan;
using cudnn::SdpaShape;

struct Device {
  cudnnHandle_t handle = nullptr;
  std::string refusal;  // set when no handle could be made on this device
  std::mutex run_mu;    // cudnnSetStream + execute on the shared handle
};

// A plan, or the reason there is none. Entries are never erased, so a
// refusal's c_str() stays valid for the process (unsupported() returns it).
struct Entry {
  std::optional<SdpaPlan> plan;
  std::string refusal;
};

struct State {
  std::mutex mu;
  std::map<int, std::unique_ptr<Device>> devices;
  std::map<std::pair<int, SdpaShape>, std::unique_ptr<Entry>> plans;
  std::map<std::string, std::unique_ptr<std::string>> reasons;  // interned static refusals
};

State& state() {
  static State s;
  return s;
}

// Interns a message so its c_str() outlives the call (caller holds state().mu).
const char* intern(const std::string& msg) {
  auto& slot = state().reasons[msg];
  if (!slot) slot = std::make_unique<std::string>(msg);
  return slot->c_str();
}

std::string version_of(size_t v) {  // cudnnGetVersion: major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// Refusals that need no cuDNN call: what its fused attention does not take.
const char* shape_refusal(const AttnParams& p) {
  if (p.dtype != ElemType::f16 && p.dtype != ElemType::bf16)
    return "cudnn: fused attention takes fp16 or bf16 only";
  if (p.head_dim % 8 != 0 || p.head_dim > 256)
    return "cudnn: head_dim must be a multiple of 8 and at most 256";
  if (p.causal && p.seqlen_q > p.seqlen_k)
    return "cudnn: bottom-right causal needs seqlen_q <= seqlen_k (cuDNN cannot express rows "
           "that see no key)";
  if (p.heads_kv <= 0 || p.heads % p.heads_kv != 0) return "cudnn: heads must be a multiple of heads_kv";
  // 16-byte aligned rows: every stride a multiple of 8 two-byte elements.
  for (int64_t s : {p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride,
                    p.k_row_stride, p.k_head_stride, p.v_batch_stride, p.v_row_stride,
                    p.v_head_stride, p.o_batch_stride, p.o_row_stride, p.o_head_stride})
    if (s % 8 != 0) return "cudnn: strides must be multiples of 8 elements (16-byte alignment)";
  return nullptr;
}

SdpaShape shape_of(const AttnParams& p) {
  SdpaShape s;
  s.io = p.dtype == ElemType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  s.batch = p.batch, s.heads = p.heads, s.heads_kv = p.heads_kv;
  s.seqlen_q = p.seqlen_q, s.seqlen_k = p.seqlen_k, s.head_dim = p.head_dim;
  auto put = [](int64_t* d, int64_t batch, int64_t head, int64_t row) { d[0] = batch, d[1] = head, d[2] = row; };
  put(s.q_stride, p.q_batch_stride, p.q_head_stride, p.q_row_stride);
  put(s.k_stride, p.k_batch_stride, p.k_head_stride, p.k_row_stride);
  put(s.v_stride, p.v_batch_stride, p.v_head_stride, p.v_row_stride);
  put(s.o_stride, p.o_batch_stride, p.o_head_stride, p.o_row_stride);
  s.causal = p.causal;
  return s;
}

// The current device's handle, made on first use (caller holds state().mu).
Device& device(int* id) {
  *id = -1;
  State& st = state();
  if (cudaGetDevice(id) != cudaSuccess) {
    cudaGetLastError();  // clear: no device is not a sticky error
    *id = -1;
  }
  auto& slot = st.devices[*id];
  if (slot) return *slot;
  slot = std::make_unique<Device>();
  if (*id < 0) {
    slot->refusal = "cudnn: no CUDA device";
    return *slot;
  }
  size_t v = cudnnGetVersion();
  if (v < 90000) {
    slot->refusal = "cudnn: cuDNN " + version_of(v) + " loaded; the backend graph needs 9.0 or later";
    return *slot;
  }
  cudnnStatus_t s = cudnnCreate(&slot->handle);
  if (s != CUDNN_STATUS_SUCCESS) {
    slot->refusal = "cudnn: " + cudnn::describe(s, "cudnnCreate");
    slot->handle = nullptr;
  }
  return *slot;
}

// The plan entry for p on the current device, built on first sight.
// Returns nullptr with *why set when p cannot run.
Entry* entry_for(const AttnParams& p, Device** dev_out, const char** why) {
  if (const char* r = shape_refusal(p)) {
    *why = r;
    return nullptr;
  }
  std::lock_guard lock(state().mu);
  int id = -1;
  Device& dev = device(&id);
  *dev_out = &dev;
  if (!dev.handle) {
    *why = intern(dev.refusal);
    return nullptr;
  }
  auto& slot = state().plans[{id, shape_of(p)}];
  if (!slot) {
    slot = std::make_unique<Entry>();
    try {
      slot->plan = cudnn::build_sdpa_plan(dev.handle, shape_of(p));
    } catch (const Failure& f) {
      slot->refusal = "cudnn: " + f.what;
    }
  }
  if (!slot->plan) {
    *why = slot->refusal.c_str();
    return nullptr;
  }
  return slot.get();
}

}  // namespace

int64_t workspace_bytes(const AttnParams& p) {
  Device* dev = nullptr;
  const char* why = nullptr;
  Entry* e = entry_for(p, &dev, &why);
  return e ? e->plan->workspace_bytes : 0;
}

const char* unsupported(const AttnParams& p) {
  Device* dev = nullptr;
  const char* why = nullptr;
  return entry_for(p, &dev, &why) ? nullptr : why;
}

int launch(const AttnParams& p, void* stream) {
  Device* dev = nullptr;
  const char* why = nullptr;
  Entry* e = entry_for(p, &dev, &why);
  if (e == nullptr) {
    std::fprintf(stderr, "cudnn launch refused (b%d h%d/%d q%d k%d d%d): %s\n", p.batch, p.heads,
                 p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, why);
    return int(cudaErrorNotSupported);
  }
  const SdpaPlan& plan = *e->plan;
  if (plan.workspace_bytes > 0 && (p.workspace == nullptr || p.workspace_bytes < plan.workspace_bytes)) {
    std::fprintf(stderr, "cudnn launch: plan needs %lld workspace bytes, params give %lld\n",
                 (long long)plan.workspace_bytes, (long long)p.workspace_bytes);
    return int(cudaErrorInvalidValue);
  }

  // By-value scalars: cuDNN copies them into the kernel's arguments during execute.
  float scale = p.softmax_scale;
  float neg_inf = -std::numeric_limits<float>::infinity();
  int32_t seqlen_k = p.seqlen_k, seqlen_q = p.seqlen_q;
  int64_t uids[9] = {cudnn::kUidQ, cudnn::kUidK, cudnn::kUidV, cudnn::kUidO, cudnn::kUidStats,
                     cudnn::kUidScale, cudnn::kUidNegInf, cudnn::kUidSeqlenK, cudnn::kUidSeqlenQ};
  void* ptrs[9] = {const_cast<void*>(p.q), const_cast<void*>(p.k), const_cast<void*>(p.v), p.o,
                   p.lse, &scale, &neg_inf, &seqlen_k, &seqlen_q};
  // The graph holds the -inf mask only when causal, the diagonal shift only when it is not 0.
  int64_t n = 6;  // Q K V O Stats scale
  if (p.causal) n = plan.shifted_diagonal ? 9 : 7;

  try {
    cudnn::Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* workspace = p.workspace;
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids, "variant pack ids")
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs, "variant pack pointers")
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, "variant pack workspace")
        .finalize("variant pack");
    std::lock_guard run_lock(dev->run_mu);
    cudnnStatus_t s = cudnnSetStream(dev->handle, static_cast<cudaStream_t>(stream));
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendExecute(dev->handle, plan.plan.get(), pack.get());
    if (s != CUDNN_STATUS_SUCCESS) {
      std::fprintf(stderr, "cudnn launch (b%d h%d/%d q%d k%d d%d): %s\n", p.batch, p.heads, p.heads_kv,
                   p.seqlen_q, p.seqlen_k, p.head_dim, cudnn::describe(s, "cudnnBackendExecute").c_str());
      // A CUDA error underneath (illegal address) is reported as itself so the
      // runner can stop; a cuDNN-only failure is not sticky: cudaErrorUnknown.
      cudaError_t c = cudaGetLastError();
      return int(c != cudaSuccess ? c : cudaErrorUnknown);
    }
  } catch (const Failure& f) {
    std::fprintf(stderr, "cudnn launch: %s\n", f.what.c_str());
    return int(cudaErrorUnknown);
  }
  return int(cudaSuccess);
}

const char* runtime_version() {
  static const std::string v = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      return std::string();
    }
    return version_of(cudnnGetVersion());
  }();
  return v.c_str();
}

}  // namespace fa::cudnn_sdpa
#endif  // FA_BENCH_HAVE_CUDNN
