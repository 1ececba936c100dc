// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/plan_cache.h"

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <optional>

namespace fa::cudnn {
namespace {

// A plan, or the reason there is none. Entries are never erased, so a
// refusal's c_str() stays valid for the process.
struct Entry {
  std::optional<SdpaPlan> plan;
  std::string refusal;
};

struct State {
  std::mutex mu;
  std::map<int, std::unique_ptr<Device>> devices;
  std::map<std::pair<int, SdpaShape>, std::unique_ptr<Entry>> plans;
};

State& state() {
  static State s;
  return s;
}

// The current device's handle, made on first use (caller holds state().mu).
Device& current_device(int* id) {
  *id = -1;
  if (cudaGetDevice(id) != cudaSuccess) {
    cudaGetLastError();  // clear: no device is not a sticky error
    *id = -1;
  }
  auto& slot = state().devices[*id];
  if (slot) return *slot;
  slot = std::make_unique<Device>();
  if (*id < 0) {
    slot->refusal = "cudnn: no CUDA device";
    return *slot;
  }
  size_t v = cudnnGetVersion();
  if (v < 90000) {
    slot->refusal = "cudnn: cuDNN " + version_string(v) + " loaded; the backend graph needs 9.0 or later";
    return *slot;
  }
  cudnnStatus_t s = cudnnCreate(&slot->handle);
  if (s != CUDNN_STATUS_SUCCESS) {
    slot->refusal = "cudnn: " + describe(s, "cudnnCreate");
    slot->handle = nullptr;
  }
  return *slot;
}

}  // namespace

std::string version_string(size_t v) {  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

const SdpaPlan* cached_plan(const SdpaShape& shape, Device** dev_out, const char** why) {
  std::lock_guard lock(state().mu);
  int id = -1;
  Device& dev = current_device(&id);
  *dev_out = &dev;
  if (!dev.handle) {
    *why = dev.refusal.c_str();  // Device entries are never erased either
    return nullptr;
  }
  auto& slot = state().plans[{id, shape}];
  if (!slot) {
    slot = std::make_unique<Entry>();
    try {
      slot->plan = shape.pass == SdpaPass::fwd ? build_sdpa_plan(dev.handle, shape)
                                               : build_sdpa_bwd_plan(dev.handle, shape);
    } catch (const Failure& f) {
      slot->refusal = "cudnn: " + f.what;
    }
  }
  if (!slot->plan) {
    *why = slot->refusal.c_str();
    return nullptr;
  }
  return &*slot->plan;
}

int execute(Device& dev, const SdpaPlan& plan, std::vector<void*>& pointers, void* cudnn_workspace, void* stream,
            std::string* error) {
  try {
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(plan.uids.size()), plan.uids.data(),
             "variant pack ids")
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(pointers.size()), pointers.data(),
             "variant pack pointers")
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &cudnn_workspace, "variant pack workspace")
        .finalize("variant pack");
    std::lock_guard run_lock(dev.run_mu);
    cudnnStatus_t s = cudnnSetStream(dev.handle, static_cast<cudaStream_t>(stream));
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendExecute(dev.handle, plan.plan.get(), pack.get());
    if (s != CUDNN_STATUS_SUCCESS) {
      *error = describe(s, "cudnnBackendExecute");
      // A CUDA error underneath (illegal address) is reported as itself so the
      // runner can stop; a cuDNN-only failure is not sticky: cudaErrorUnknown.
      cudaError_t c = cudaGetLastError();
      return int(c != cudaSuccess ? c : cudaErrorUnknown);
    }
  } catch (const Failure& f) {
    *error = f.what;
    return int(cudaErrorUnknown);
  }
  return int(cudaSuccess);
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
