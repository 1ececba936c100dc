// Options of `fa-bench sweep`. Every config key has a flag of the same name
// ('-' for '_'); a flag's text overrides the config file's value.
#pragma once
#include <map>
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
  std::string config;                         // --config FILE
  std::string resume;                         // --resume FILE
  std::map<std::string, std::string> values;  // key -> text, for flags given
  bool no_l2_flush = false;
  bool counters = false;
};

}  // namespace fa::cli
