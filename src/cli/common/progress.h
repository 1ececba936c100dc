// A one-line progress indicator on stderr, only when stderr is a terminal:
// logs and CI output stay clean.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>

namespace fa::cli {

class ProgressLine {
 public:
  ProgressLine();  // enabled iff isatty(stderr)
  ~ProgressLine();
  void update(size_t done, size_t total, const std::string& what);
  void clear();  // before printing anything else to stderr
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fa::cli
