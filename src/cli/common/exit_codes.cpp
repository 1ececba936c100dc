#include "cli/common/exit_codes.h"

#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa::cli {

void print_error(const std::string& program, const std::string& message) {
  fmt::print(stderr, "{}: error: {}\n", program, message);
  std::fflush(stderr);
}

void print_note(const std::string& program, const std::string& message) {
  fmt::print(stderr, "{}: {}\n", program, message);
  std::fflush(stderr);
}

int run_guarded(const std::string& program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const fa::UsageError& e) {
    print_error(program, e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    print_error(program, e.what());
    return kExitFailure;
  }
}

}  // namespace fa::cli
