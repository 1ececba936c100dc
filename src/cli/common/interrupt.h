// Ctrl-C (SIGINT) or SIGTERM during a sweep: the first signal requests a stop
// (core/stop.h) that the runner honours between rows and the loops inside a row
// (inputs, reference, kernels, timing) within a second, abandoning the row in
// progress (so the files keep every finished row and the program exits 130); a second one at least a second later ends the process at
// once (exit 130; the files already hold every finished row). A second signal
// within that second is taken as the same request: `timeout` and some shells
// deliver one interrupt twice (to the process and to its group), and treating
// the echo as "kill now" lost the orderly stop on the H200 run of 2026-11-30.
#pragma once

namespace fa::cli {

void install_sigint_handler();
bool interrupted();

}  // namespace fa::cli
