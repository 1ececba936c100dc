// --devices LIST|all for fa-bench sweep and fa-check: one executor per device
// the list names, each checked before any file is created. Workers are threads
// of this process, each with its own executor (on cuda: its own stream and
// buffers on its device, the thread bound to it), rather than processes: the
// runner, the reference and the output files stay one piece of code, and the
// one stop request (core/stop.h) reaches every worker.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "measure/executor.h"
#include "sweep/values.h"

namespace fa::cli {

struct DeviceSlot {
  std::unique_ptr<Executor> executor;
  DeviceIdentity device;
};

// `picked` is pick_executor's (backend.h): it decides the back end, and serves
// device 0 if the list names it. cpu: the CPU is the one device, 0 ("0" or
// "all"); cuda: "all" is every device this process sees (CUDA_VISIBLE_DEVICES
// applies), and a number past them is a UsageError naming `where` (the flag or
// the config key). On return the calling thread is bound to the first slot's
// device, which the run's metadata (device, matmul ceiling) describes.
std::vector<DeviceSlot> open_devices(std::unique_ptr<Executor> picked, const DeviceList&, const std::string& where);

// The list the slots ran on ("all" resolved), for the run's config.
DeviceList device_list_of(const std::vector<DeviceSlot>&);

}  // namespace fa::cli
