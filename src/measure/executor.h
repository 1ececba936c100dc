// A back end that holds a problem's tensors, runs kernels on them and times them.
// The runner is written once against this; cpu and cuda implement it.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/attn_params.h"
#include "core/errors.h"
#include "core/run_context.h"
#include "core/tensors.h"
#include "core/timing.h"
#include "core/traffic.h"
#include "core/types.h"

namespace fa {

struct DeviceInfo {
  std::string name;       // "NVIDIA H200" / CPU model
  std::map<std::string, std::string> details;  // driver, cuda, cudnn, sm_count, l2_bytes, ...
  // details' sm_count as a number; 0 where the back end has none (cpu).
  int sm_count() const {
    const auto it = details.find("sm_count");
    return it == details.end() ? 0 : std::atoi(it->second.c_str());
  }
};

struct ClockReading {  // SM clock in MHz, -1 where it cannot be read
  int sm_mhz = -1;
  int max_sm_mhz = -1;  // the device's maximum SM clock
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual Backend backend() const = 0;
  virtual DeviceInfo info() const = 0;
  // Allocate Q, K, V, O, LSE for p and copy the host inputs in (converted to the
  // storage type: float32 on cpu, p.dtype on cuda). When `in` carries dO, also
  // dO, dQ, dK, dV for the backward pass. Throws OutOfMemory.
  virtual void prepare(const AttnProblem& p, const HostInputs& in) = 0;
  // The same buffers, allocated and left for the caller to fill on the device
  // (the cuda back end's inputs made there, check/inputs_gpu.h): Q, K, V, and
  // with_dout dO, dQ, dK, dV. Throws OutOfMemory; KernelError on a back end
  // whose tensors are not device memory (cpu).
  struct InputBuffers {
    void* q = nullptr;
    void* k = nullptr;
    void* v = nullptr;
    void* dout = nullptr;
  };
  virtual InputBuffers allocate(const AttnProblem& /*p*/, bool /*with_dout*/) {
    throw KernelError("this back end's tensors are not device memory: its inputs are prepared from the host");
  }
  // Pointers and strides of the prepared buffers, workspace (and, after a
  // prepare with dO, the backward's tensors) included.
  virtual AttnParams params() const = 0;
  // Make p.workspace at least `bytes` (throws OutOfMemory).
  virtual void reserve_workspace(int64_t bytes) = 0;
  // What the next forward runs write O in (KernelVariant::o_dtype): after
  // prepare or allocate, output_dtype(p.dtype); an e4m3 point's kernel may
  // write e4m3 instead, O's codes scaled by HostInputs::o_scale, which params()
  // then passes (o_dtype, o_scale) and fetch_outputs dequantizes. KernelError
  // for an O dtype the point cannot have; the cpu back end takes only the default.
  virtual void set_o_dtype(DType) = 0;
  // Fill O and LSE with NaN so unwritten elements show.
  virtual void poison_outputs() = 0;
  // Run once, wait, and surface any error as KernelError.
  virtual void run_once(const std::function<void(RunContext&)>& launch) = 0;
  virtual HostOutputs fetch_outputs() = 0;
  // The backward's outputs (after a prepare with dO): NaN into dQ, dK, dV so
  // unwritten elements show, and their values back.
  virtual void poison_grads() = 0;
  virtual HostGrads fetch_grads() = 0;
  virtual TimingSummary time(const std::function<void(RunContext&)>& launch,
                             const TimingOptions&) = 0;
  // Bytes of device memory in use beyond inputs and outputs at the high-water
  // mark of the last run_once (workspace, library scratch); -1 if unknown.
  virtual int64_t peak_extra_bytes() const = 0;
  virtual ClockReading clock() const { return {}; }
  // The measured bf16 matmul ceiling (cuBLAS 8192^3) in TFLOP/s, measured once
  // per process on first call; 0 where not measured (cpu).
  virtual double matmul_ceiling_tflops() { return 0; }
  // The measured device copy bandwidth in GB/s (10^9 B/s: bytes read + written by a
  // device-to-device copy of a buffer much larger than L2), the roofline's memory roof;
  // measured once per process on first call; 0 where not measured (cpu).
  virtual double copy_bandwidth_gbps() { return 0; }
  // DRAM bytes one launch moves and its L2 hit rate, read through hardware
  // counters in an untimed pass; nullopt with `why` set where they cannot be read.
  struct DramReading {
    Traffic bytes;
    double l2_hit_rate = -1;  // percent (lts__t_sector_hit_rate.pct), -1 if not read
  };
  virtual std::optional<DramReading> measure_dram(const std::function<void(RunContext&)>& /*launch*/,
                                              std::string* why) {
    *why = "hardware counters are not available on this back end";
    return std::nullopt;
  }
  // Free everything held for the current problem.
  virtual void release() = 0;
  // Make the calling thread's work go to this executor's device (cuda: the
  // runtime's current device is per thread). A worker thread of --devices calls
  // it before it uses the executor; the thread that made it need not.
  virtual void bind_thread() {}
};

std::unique_ptr<Executor> make_cpu_executor(int threads);
// nullptr with `why` set when no CUDA device (or no CUDA build) is present.
std::unique_ptr<Executor> make_cuda_executor(int device, std::string* why);
// CUDA devices this process sees (after CUDA_VISIBLE_DEVICES); 0 with `why` set
// when there is none (no driver, no CUDA build).
int cuda_device_count(std::string* why);

}  // namespace fa
