#include "core/stop.h"

#include <atomic>
#include <chrono>
#include <cstdint>

namespace fa {

namespace {
// Lock-free atomics: safe to store from a signal handler.
std::atomic<int> g_reason{0};
std::atomic<int64_t> g_deadline_ns{0};  // steady_clock nanoseconds; 0 = none

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void request_stop(StopReason r) noexcept {
  int none = 0;
  g_reason.compare_exchange_strong(none, int(r));  // the first reason stays
}

void set_stop_deadline(double seconds) {
  g_deadline_ns.store(seconds > 0 ? now_ns() + int64_t(seconds * 1e9) : 0);
}

void clear_stop() noexcept {
  g_reason.store(0);
  g_deadline_ns.store(0);
}

StopReason stop_reason() noexcept {
  if (int r = g_reason.load(); r != 0) return StopReason(r);
  const int64_t deadline = g_deadline_ns.load();
  if (deadline != 0 && now_ns() >= deadline) {
    request_stop(StopReason::timeout);
    return StopReason(g_reason.load());
  }
  return StopReason::none;
}

Stopped::Stopped(StopReason r)
    : std::runtime_error(r == StopReason::timeout ? "stopped: the --timeout deadline passed"
                                                  : "stopped: interrupted"),
      reason(r) {}

void throw_if_stopped() {
  if (StopReason r = stop_reason(); r != StopReason::none) throw Stopped(r);
}

}  // namespace fa
