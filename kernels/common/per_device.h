// A value worked out once per CUDA device and process: a device's compute
// capability, a symbol's address on it, a ceiling measured on it. With --devices,
// several host threads drive GPUs (possibly of different kinds) at once, so the
// cache is keyed by device index and safe to share between threads.
//
// Each device has its own lock, held while its value is worked out: two threads on
// one device do not both measure it, and a measurement on one device (the matmul
// ceiling takes a while) does not hold up another device's. A failed attempt
// (nullopt) is not kept; the next caller tries again. Host code only, no CUDA types:
// the caller passes the device index.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace fa {

template <typename T>
class PerDevice {
 public:
  // The device's value, computed by compute() (returning std::optional<T>) the
  // first time it succeeds.
  template <typename Compute>
  std::optional<T> get(int device, Compute&& compute) {
    Slot& s = slot(device);
    std::lock_guard lock(s.mu);
    if (!s.value) s.value = compute();
    return s.value;
  }

 private:
  struct Slot {
    std::mutex mu;
    std::optional<T> value;
  };
  Slot& slot(int device) {
    std::lock_guard lock(mu_);
    std::unique_ptr<Slot>& s = slots_[device];
    if (!s) s = std::make_unique<Slot>();
    return *s;  // slots are never removed: the reference outlives the lock
  }
  std::mutex mu_;
  std::map<int, std::unique_ptr<Slot>> slots_;
};

}  // namespace fa
