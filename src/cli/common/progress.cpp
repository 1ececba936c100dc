#include "cli/common/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace fa::cli {

ProgressLine::ProgressLine()
    : enabled_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() { clear(); }

std::string describe(const WallTimeSplit& w) {
  return fmt::format("inputs {:.0f}s reference {:.0f}s validation {:.0f}s timing {:.0f}s", w.inputs, w.reference,
                     w.validation, w.timing);
}

void ProgressLine::update(size_t done, size_t total, const std::string& what, const WallTimeSplit* wall) {
  if (!enabled_) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = wall ? fmt::format("[{}/{} {:.0f}s: {}] {}", done, total, s, describe(*wall), what)
                          : fmt::format("[{}/{} {:.0f}s] {}", done, total, s, what);
  if (line.size() > 120) line = line.substr(0, 117) + "...";
  fmt::print(stderr, "\r\033[K{}", line);  // \033[K clears the rest of the old line
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace fa::cli
