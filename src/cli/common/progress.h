// A one-line progress indicator on stderr, only when stderr is a terminal:
// logs and CI output stay clean.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>

#include "sweep/runner.h"

namespace fa::cli {

// "inputs 1s reference 3s validation 0s timing 10s": the progress line's
// words for a WallTimeSplit.
std::string describe(const WallTimeSplit&);

class ProgressLine {
 public:
  ProgressLine();  // enabled iff isatty(stderr)
  ~ProgressLine();
  // With `wall`, the sweep's wall time split so far is shown before `what`.
  void update(size_t done, size_t total, const std::string& what, const WallTimeSplit* wall = nullptr);
  void clear();  // before printing anything else to stderr
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fa::cli
