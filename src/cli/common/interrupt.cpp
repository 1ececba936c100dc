#include "cli/common/interrupt.h"

#include <time.h>
#include <unistd.h>

#include <csignal>

#include "core/stop.h"

namespace fa::cli {

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
volatile std::sig_atomic_t g_first_second = 0;  // CLOCK_MONOTONIC seconds at the first signal

long now_seconds() {  // clock_gettime is async-signal-safe
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return long(ts.tv_sec);
}

extern "C" void on_stop_signal(int) {
  if (!g_interrupted) {
    g_interrupted = 1;
    g_first_second = std::sig_atomic_t(now_seconds());
    request_stop(StopReason::interrupted);  // the loops inside a row check it too
    return;
  }
  // A real second request comes a human reaction time later; an echo of the
  // first one arrives within microseconds.
  if (now_seconds() - long(g_first_second) >= 1) _exit(130);
}
}  // namespace

void install_sigint_handler() {
  g_interrupted = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

}  // namespace fa::cli
