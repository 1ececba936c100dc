#pragma once
#include <string>

#include "compare/compare.h"

namespace fa::cli {

struct CompareCliOptions {
  std::string baseline, current;
  std::string md;                    // --md FILE: also write the report there
  std::string metric = "latency";    // latency | tflops
  bool allow_device_mismatch = false;
  CompareOptions rule;
};

}  // namespace fa::cli
