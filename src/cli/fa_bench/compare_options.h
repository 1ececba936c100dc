#pragma once
#include <optional>
#include <string>

#include "compare/compare.h"

namespace fa::cli {

struct CompareCliOptions {
  std::string baseline, current;
  std::optional<std::string> md;     // --md FILE: also write the report there ('-': stdout has it)
  std::string md_text;               // what CLI11 fills; md is set from it when --md was given
  std::string metric = "latency";    // latency | tflops
  // The thresholds as typed; parsed (finite, in range) into `rule` when given.
  std::string max_slowdown, max_error_growth;
  bool allow_device_mismatch = false;
  CompareOptions rule;
};

}  // namespace fa::cli
