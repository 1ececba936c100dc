// Options of `fa-bench sweep`. Every config key has a flag of the same name
// ('-' for '_'); a flag's text overrides the config file's value.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fa::cli {

struct SweepFlag {
  const char* flag;  // "--seqlen"
  const char* key;   // "seqlen": the config key, JSON key and CSV column where one exists
  const char* help;  // with an example
  const char* type;  // what --help shows for the value
};

// Flags that take a value; the table is the single place that names them.
const std::vector<SweepFlag>& sweep_value_flags();

struct SweepOptions {
  std::optional<std::string> config;          // --config FILE
  std::optional<std::string> resume;          // --resume FILE
  bool resume_allow_changes = false;          // --resume-allow-changes
  std::map<std::string, std::string> values;  // key -> text, for flags given
  std::map<std::string, std::string> flag_of;  // key -> the flag that gave it ("--max-seconds")
  bool no_l2_flush = false;
  bool counters = false;
  bool exact_check = false;
  bool fp8_hadamard = false;
};

}  // namespace fa::cli
