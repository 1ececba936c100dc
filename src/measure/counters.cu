// DRAM bytes of one launch from the GPU's counters, through CUPTI's range
// profiler (CUDA 12.6+ API: cupti_range_profiler.h + cupti_profiler_host.h).
//
// CUPTI is opened with dlopen at first use, not linked: a binary that links
// libcupti would not start where CUPTI is missing, and fa-bench must start on
// machines without a GPU or driver. The CUcontext comes from the runtime's
// driver entry-point query, so nothing here links libcuda either.
//
// What the pass measures: the launch runs inside one user range (every kernel
// it enqueues counted together), replayed by us as often as the metrics need
// passes. Before each pass L2 is filled with clean lines by reading a buffer of
// twice its size: the launch then starts cold, like a timed sample, and the
// flush leaves no dirty lines whose write-back would be billed to the launch.
// Lines the launch itself leaves dirty in L2 at its end are not written back
// inside the range, so `write_bytes` can fall short of the bytes stored by up
// to the L2 size (60 MiB on an H200); ncu counts the same way.
#include "measure/counters.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fa {
namespace {

const char* const kMetrics[] = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                "lts__t_sector_hit_rate.pct"};
constexpr size_t kNumMetrics = sizeof(kMetrics) / sizeof(kMetrics[0]);
constexpr int kMaxPasses = 16;  // a guard against a replay that never completes

// The CUPTI entry points we use, resolved from the shared library.
struct Cupti {
#define FA_CUPTI_FN(name) decltype(&::name) name = nullptr;
  FA_CUPTI_FN(cuptiGetResultString)
  FA_CUPTI_FN(cuptiProfilerInitialize)
  FA_CUPTI_FN(cuptiDeviceGetChipName)
  FA_CUPTI_FN(cuptiProfilerGetCounterAvailability)
  FA_CUPTI_FN(cuptiProfilerHostInitialize)
  FA_CUPTI_FN(cuptiProfilerHostConfigAddMetrics)
  FA_CUPTI_FN(cuptiProfilerHostGetConfigImageSize)
  FA_CUPTI_FN(cuptiProfilerHostGetConfigImage)
  FA_CUPTI_FN(cuptiProfilerHostEvaluateToGpuValues)
  FA_CUPTI_FN(cuptiRangeProfilerEnable)
  FA_CUPTI_FN(cuptiRangeProfilerDisable)
  FA_CUPTI_FN(cuptiRangeProfilerGetCounterDataSize)
  FA_CUPTI_FN(cuptiRangeProfilerCounterDataImageInitialize)
  FA_CUPTI_FN(cuptiRangeProfilerSetConfig)
  FA_CUPTI_FN(cuptiRangeProfilerStart)
  FA_CUPTI_FN(cuptiRangeProfilerStop)
  FA_CUPTI_FN(cuptiRangeProfilerPushRange)
  FA_CUPTI_FN(cuptiRangeProfilerPopRange)
  FA_CUPTI_FN(cuptiRangeProfilerDecodeData)
#undef FA_CUPTI_FN
  std::string error;  // why CUPTI could not be loaded ("" = loaded)
};

const Cupti& cupti() {
  static const Cupti c = [] {
    Cupti c;
    void* lib = nullptr;
    for (const char* name : {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
                             "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (lib == nullptr) {
      const char* e = dlerror();
      c.error = std::string("CUPTI not found (dlopen libcupti.so.13): ") + (e ? e : "?");
      return c;
    }
#define FA_CUPTI_LOAD(name)                                                   \
  c.name = reinterpret_cast<decltype(c.name)>(dlsym(lib, #name));             \
  if (c.name == nullptr && c.error.empty()) c.error = "CUPTI lacks " #name " (older than CUDA 12.6?)";
    FA_CUPTI_LOAD(cuptiGetResultString)
    FA_CUPTI_LOAD(cuptiProfilerInitialize)
    FA_CUPTI_LOAD(cuptiDeviceGetChipName)
    FA_CUPTI_LOAD(cuptiProfilerGetCounterAvailability)
    FA_CUPTI_LOAD(cuptiProfilerHostInitialize)
    FA_CUPTI_LOAD(cuptiProfilerHostConfigAddMetrics)
    FA_CUPTI_LOAD(cuptiProfilerHostGetConfigImageSize)
    FA_CUPTI_LOAD(cuptiProfilerHostGetConfigImage)
    FA_CUPTI_LOAD(cuptiProfilerHostEvaluateToGpuValues)
    FA_CUPTI_LOAD(cuptiRangeProfilerEnable)
    FA_CUPTI_LOAD(cuptiRangeProfilerDisable)
    FA_CUPTI_LOAD(cuptiRangeProfilerGetCounterDataSize)
    FA_CUPTI_LOAD(cuptiRangeProfilerCounterDataImageInitialize)
    FA_CUPTI_LOAD(cuptiRangeProfilerSetConfig)
    FA_CUPTI_LOAD(cuptiRangeProfilerStart)
    FA_CUPTI_LOAD(cuptiRangeProfilerStop)
    FA_CUPTI_LOAD(cuptiRangeProfilerPushRange)
    FA_CUPTI_LOAD(cuptiRangeProfilerPopRange)
    FA_CUPTI_LOAD(cuptiRangeProfilerDecodeData)
#undef FA_CUPTI_LOAD
    return c;
  }();
  return c;
}

// Thrown inside this file only; measure_dram_bytes turns it into nullopt + why.
struct Unavailable {
  std::string why;
};

void check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* name = nullptr;
  if (cupti().cuptiGetResultString(r, &name) != CUPTI_SUCCESS || name == nullptr) name = "?";
  std::string why = std::string(call) + ": " + name;
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
    why += " (GPU counters need root or the driver option NVreg_RestrictProfilingToAdminUsers=0)";
  if (r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED) why += " (counters are not exposed on this virtual GPU)";
  throw Unavailable{why};
}

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Unavailable{std::string(call) + ": " + cudaGetErrorString(e)};
}

CUcontext current_context() {
  using GetCurrent = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check_cuda(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found),
             "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) throw Unavailable{"driver lacks cuCtxGetCurrent"};
  CUcontext ctx = nullptr;
  if (reinterpret_cast<GetCurrent>(fn)(&ctx) != CUDA_SUCCESS || ctx == nullptr)
    throw Unavailable{"cuCtxGetCurrent: no current CUDA context"};
  return ctx;
}

// Reads every element so L2 ends up full of clean lines from this buffer.
__global__ void read_through(const uint4* __restrict__ buf, size_t n, unsigned* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) atomicAdd(sink, 1u);  // keeps the loads; almost never taken
}

// Per device: the config image (which counters, how many passes), the host
// object that evaluates metrics, and the flush buffer.
struct DeviceSetup {
  std::vector<uint8_t> config;
  CUpti_Profiler_Host_Object* host = nullptr;
  uint4* flush = nullptr;
  size_t flush_vecs = 0;
  unsigned* sink = nullptr;
};

DeviceSetup& setup_for(int device, CUcontext ctx) {
  static std::map<int, DeviceSetup> setups;
  auto it = setups.find(device);
  if (it != setups.end()) return it->second;
  const Cupti& c = cupti();
  DeviceSetup s;

  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  check(c.cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = size_t(device);
  check(c.cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");

  CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = ctx;
  check(c.cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability(size)");
  std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  check(c.cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");

  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.pChipName;
  host.pCounterAvailabilityImage = availability.data();
  check(c.cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
  s.host = host.pHostObject;

  const char* names[kNumMetrics];
  for (size_t i = 0; i < kNumMetrics; ++i) names[i] = kMetrics[i];
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = s.host;
  add.ppMetricNames = names;
  add.numMetrics = kNumMetrics;
  check(c.cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = s.host;
  check(c.cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
  s.config.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = s.host;
  image.configImageSize = s.config.size();
  image.pConfigImage = s.config.data();
  check(c.cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");

  int l2 = 0;
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  size_t bytes = 2 * size_t(l2 > 0 ? l2 : 64 << 20);
  s.flush_vecs = bytes / sizeof(uint4);
  check_cuda(cudaMalloc(&s.flush, bytes), "cudaMalloc(L2 flush buffer)");
  check_cuda(cudaMemset(s.flush, 0x5a, bytes), "cudaMemset(L2 flush buffer)");
  check_cuda(cudaMalloc(&s.sink, sizeof(unsigned)), "cudaMalloc(flush sink)");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize(flush setup)");
  return setups.emplace(device, std::move(s)).first->second;
}

void flush_l2(const DeviceSetup& s) {
  read_through<<<1024, 256>>>(s.flush, s.flush_vecs, s.sink);
  check_cuda(cudaGetLastError(), "read_through<<<>>> (L2 flush)");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize(L2 flush)");
}

DramCounts profile(const std::function<void()>& launch) {
  const Cupti& c = cupti();
  if (!c.error.empty()) throw Unavailable{c.error};
  int device = -1;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaFree(nullptr), "cudaFree(0) (context creation)");
  CUcontext ctx = current_context();
  DeviceSetup& s = setup_for(device, ctx);

  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = ctx;
  check(c.cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable");
  CUpti_RangeProfiler_Object* obj = enable.pRangeProfilerObject;
  // Disable on every exit path: a profiler left enabled blocks the next pass.
  struct Disable {
    const Cupti& c;
    CUpti_RangeProfiler_Object* obj;
    ~Disable() {
      CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
      p.pRangeProfilerObject = obj;
      c.cuptiRangeProfilerDisable(&p);
    }
  } disable{c, obj};

  const char* names[kNumMetrics];
  for (size_t i = 0; i < kNumMetrics; ++i) names[i] = kMetrics[i];
  CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = obj;
  size.pMetricNames = names;
  size.numMetrics = kNumMetrics;
  size.maxNumOfRanges = 1;
  size.maxNumRangeTreeNodes = 1;
  check(c.cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
  std::vector<uint8_t> data(size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  init.pRangeProfilerObject = obj;
  init.counterDataSize = data.size();
  init.pCounterData = data.data();
  check(c.cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");

  CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  config.pRangeProfilerObject = obj;
  config.configSize = s.config.size();
  config.pConfig = s.config.data();
  config.counterDataImageSize = data.size();
  config.pCounterDataImage = data.data();
  config.range = CUPTI_UserRange;       // one range around the whole launch
  config.replayMode = CUPTI_UserReplay;  // we rerun the launch once per pass
  config.maxRangesPerPass = 1;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  check(c.cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig");

  bool all_passes = false;
  for (int pass = 0; !all_passes; ++pass) {
    if (pass == kMaxPasses) throw Unavailable{"CUPTI asked for more than 16 replay passes"};
    flush_l2(s);
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = obj;
    check(c.cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
    CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    push.pRangeProfilerObject = obj;
    push.pRangeName = "launch";
    check(c.cuptiRangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange");
    launch();
    cudaError_t launched = cudaDeviceSynchronize();
    CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    pop.pRangeProfilerObject = obj;
    check(c.cuptiRangeProfilerPopRange(&pop), "cuptiRangeProfilerPopRange");
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = obj;
    check(c.cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
    check_cuda(launched, "the profiled launch");
    all_passes = stop.isAllPassSubmitted != 0;
  }

  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = obj;
  check(c.cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
  if (decode.numOfRangeDropped != 0) throw Unavailable{"CUPTI dropped the profiled range"};

  double values[kNumMetrics] = {};
  CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  eval.pHostObject = s.host;
  eval.pCounterDataImage = data.data();
  eval.counterDataImageSize = data.size();
  eval.rangeIndex = 0;
  eval.ppMetricNames = names;
  eval.numMetrics = kNumMetrics;
  eval.pMetricValues = values;
  check(c.cuptiProfilerHostEvaluateToGpuValues(&eval), "cuptiProfilerHostEvaluateToGpuValues");
  return DramCounts{values[0], values[1], values[2]};
}

}  // namespace

std::optional<DramCounts> measure_dram_bytes(const std::function<void()>& launch, std::string* why) {
  // One profiling session at a time per process: CUPTI's range profiler is per
  // context and the device setups are shared.
  static std::mutex mu;
  std::lock_guard lock(mu);
  try {
    return profile(launch);
  } catch (const Unavailable& u) {
    if (why != nullptr) *why = "dram counters: " + u.why;
    return std::nullopt;
  }
}

}  // namespace fa
