// Ctrl-C during a sweep: the first SIGINT sets a flag the runner checks between
// rows (so the files keep every finished row and the program exits 130); a
// second SIGINT kills the process the default way.
#pragma once

namespace fa::cli {

void install_sigint_handler();
bool interrupted();

}  // namespace fa::cli
