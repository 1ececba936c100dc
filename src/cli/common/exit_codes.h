// How every fa-* program ends: one mapping from outcome to exit code, and one
// format for error messages ("fa-bench: error: ...").
#pragma once
#include <functional>
#include <string>

namespace fa::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,       // a kernel failed / errored, a sticky device error, an I/O error
  kExitUsage = 2,         // bad flag, config, input file: nothing was run or written
  kExitTimeout = 124,     // --timeout passed (as timeout(1) reports it); files hold every finished row
  kExitInterrupted = 130, // SIGINT (128 + 2, what shells report for Ctrl-C)
};

void print_error(const std::string& program, const std::string& message);
void print_note(const std::string& program, const std::string& message);

// A command-line parse error (CLI11's message) in the words the programs use
// elsewhere -- a flag given twice says so -- with a pointer to --help.
void print_parse_error(const std::string& program, const std::string& cli11_message);

// Runs `body` and maps its exceptions: fa::UsageError -> 2, anything else -> 1,
// each printed once on stderr.
int run_guarded(const std::string& program, const std::function<int()>& body);

}  // namespace fa::cli
