// Exceptions that carry where they come from; the CLI maps them to exit codes:
// UsageError -> 2 (bad flag, config, input file), others -> a status row or 1.
#pragma once
#include <stdexcept>
#include <string>

namespace fa {

struct UsageError : std::runtime_error {  // the user's input is wrong: exit 2
  using std::runtime_error::runtime_error;
};
struct OutOfMemory : std::runtime_error {  // an allocation failed: status "oom"
  using std::runtime_error::runtime_error;
};
struct KernelError : std::runtime_error {  // launch / run failure: status "error"
  // sticky: the device context is unusable (illegal address); the sweep must stop.
  KernelError(const std::string& what, bool sticky = false)
      : std::runtime_error(what), sticky(sticky) {}
  bool sticky;
};

}  // namespace fa
