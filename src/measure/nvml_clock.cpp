#include "measure/nvml_clock.h"

#include <dlfcn.h>

namespace fa {
namespace {

// The few NVML entry points used, declared here so no nvml.h is needed.
using nvmlReturn = int;  // 0 = NVML_SUCCESS
using InitFn = nvmlReturn (*)();
using ShutdownFn = nvmlReturn (*)();
using ByPciFn = nvmlReturn (*)(const char*, void**);
using ClockFn = nvmlReturn (*)(void*, int, unsigned int*);
using DriverFn = nvmlReturn (*)(char*, unsigned int);
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM

template <typename Fn>
Fn sym(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

NvmlClock::NvmlClock(const std::string& pci_bus_id) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    why_ = "libnvidia-ml.so.1 not found";
    return;
  }
  auto init = sym<InitFn>(lib_, "nvmlInit_v2");
  auto by_pci = sym<ByPciFn>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  if (!init || !by_pci) {
    why_ = "NVML lacks nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2";
    return;
  }
  if (init() != 0) {
    why_ = "nvmlInit_v2 failed";
    return;
  }
  if (by_pci(pci_bus_id.c_str(), &device_) != 0) {
    device_ = nullptr;
    why_ = "NVML does not know PCI bus id " + pci_bus_id;
  }
}

NvmlClock::~NvmlClock() {
  if (!lib_) return;
  if (auto shutdown = sym<ShutdownFn>(lib_, "nvmlShutdown"); shutdown && device_) shutdown();
  dlclose(lib_);
}

int NvmlClock::sm_mhz() const {
  if (!device_) return -1;
  auto fn = sym<ClockFn>(lib_, "nvmlDeviceGetClockInfo");
  unsigned int mhz = 0;
  return fn && fn(device_, kNvmlClockSm, &mhz) == 0 ? int(mhz) : -1;
}

int NvmlClock::max_sm_mhz() const {
  if (!device_) return -1;
  auto fn = sym<ClockFn>(lib_, "nvmlDeviceGetMaxClockInfo");
  unsigned int mhz = 0;
  return fn && fn(device_, kNvmlClockSm, &mhz) == 0 ? int(mhz) : -1;
}

std::string NvmlClock::driver_version() const {
  if (!lib_ || !device_) return "";
  auto fn = sym<DriverFn>(lib_, "nvmlSystemGetDriverVersion");
  char buf[96] = {};
  return fn && fn(buf, sizeof buf) == 0 ? std::string(buf) : std::string();
}

}  // namespace fa
