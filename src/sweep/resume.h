// Continuing a sweep from its results file (--resume FILE) is honest only when
// the rows still to run would have been made the same way as the rows already
// there: same settings, kernel selection, seed, back end and fa-bench build.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fa {

struct RunIdentity {
  nlohmann::json config;  // SweepConfig::to_json() of the run about to start
  uint64_t seed = 0;
  std::string backend;    // "cpu" / "cuda"
  std::string version, git_commit;
};

// Each difference between FILE's metadata and `now`, as "what: recorded -> now".
// Output paths, the description and the timeout are not compared: they do not
// change how a row is made.
std::vector<std::string> resume_differences(const nlohmann::json& recorded_metadata, const RunIdentity& now);

}  // namespace fa
