// A request to stop the work in progress: Ctrl-C or SIGTERM (interrupted), or
// the --timeout deadline (timeout). It is set from a signal handler (the
// setter is async-signal-safe) and checked inside every long loop (input
// generation, the float64 reference and the CPU kernels through parallel_for,
// each timing sample), which throw Stopped, so a stop is honoured within a
// task's time (well under a second) rather than at the end of the row.
#pragma once
#include <stdexcept>

namespace fa {

enum class StopReason { none, interrupted, timeout };

void request_stop(StopReason) noexcept;  // async-signal-safe
void set_stop_deadline(double seconds_from_now);  // <= 0: no deadline
void clear_stop() noexcept;
StopReason stop_reason() noexcept;  // `timeout` once the deadline has passed

struct Stopped : std::runtime_error {
  explicit Stopped(StopReason r);
  StopReason reason;
};
void throw_if_stopped();  // throws Stopped when stop_reason() is not none

}  // namespace fa
