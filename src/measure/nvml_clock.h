// SM clock and driver version through NVML, loaded at run time with
// dlopen("libnvidia-ml.so.1"): the binary links neither NVML nor libcuda, so it
// starts (and reports 'no CUDA device') on a machine without a driver.
#pragma once
#include <string>

namespace fa {

class NvmlClock {
 public:
  // pci_bus_id as cudaDeviceGetPCIBusId writes it ("0000:17:00.0"): maps the CUDA
  // device to NVML's handle whatever CUDA_VISIBLE_DEVICES does to the indices.
  explicit NvmlClock(const std::string& pci_bus_id);
  ~NvmlClock();
  NvmlClock(const NvmlClock&) = delete;
  NvmlClock& operator=(const NvmlClock&) = delete;

  bool available() const { return device_ != nullptr; }
  int sm_mhz() const;      // current SM clock, -1 if unreadable
  int max_sm_mhz() const;  // maximum SM clock, -1 if unreadable
  std::string driver_version() const;  // "" if unreadable
  const std::string& why_unavailable() const { return why_; }

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;  // nvmlDevice_t
  std::string why_;
};

}  // namespace fa
