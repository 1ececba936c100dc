#pragma once
#include <optional>
#include <string>
#include <vector>

namespace fa::cli {

struct MergeCliOptions {
  std::vector<std::string> files;          // the pieces, in the order given
  std::optional<std::string> json, csv, md;  // outputs; '-' is standard output
  std::string json_text, csv_text, md_text;  // what CLI11 fills; the optionals are set when given
  bool complete = false;                   // --complete: every row of the plan must be there
  bool allow_mixed_devices = false;        // --allow-mixed-devices
};

}  // namespace fa::cli
