#include "cli/common/exit_codes.h"

#include <cstdio>
#include <exception>
#include <regex>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa::cli {

void print_error(const std::string& program, const std::string& message) {
  fmt::print(stderr, "{}: error: {}\n", program, message);
  std::fflush(stderr);
}

namespace {

std::string parse_error_message(const std::string& cli11_message) {
  // CLI11: "--json: At Most 1 required but received 2".
  static const std::regex twice(R"(^(\S+): At Most 1 required but received (\d+)$)");
  std::smatch m;
  if (std::regex_match(cli11_message, m, twice))
    return m[1].str() + ": given " + m[2].str() + " times; expected once";
  return cli11_message;
}

}  // namespace

void print_parse_error(const std::string& program, const std::string& cli11_message) {
  print_error(program, parse_error_message(cli11_message) + " (run with --help for the flags)");
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
