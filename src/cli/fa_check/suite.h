// The check suite: a list of named shapes ("cases"), each run under one or more
// input distributions. A case is written exactly as AttnProblem::describe()
// prints it ("b1 h4/2 q257 k300 d64 bf16 causal"), so the line a failure prints
// is also the --case value that replays it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "check/inputs.h"
#include "core/fp8_settings.h"
#include "core/types.h"

namespace fa::check {

struct CheckCase {
  AttnProblem problem;
  std::vector<Distribution> distributions{Distribution::normal};
  // Which variants run on it: fwd ones check O and LSE; bwd ones run after their
  // forward partner and check dQ, dK, dV too (a fwd+bwd row would check the same).
  std::vector<Pass> passes{Pass::fwd, Pass::bwd};
  bool quick = false;                  // part of --quick
  std::optional<Backend> backend;      // only on this back end (long GPU shapes); nullopt: any
  Fp8Settings fp8;                     // e4m3 cases: how the inputs are quantized
  std::string why;                     // what the case is there to catch
};

// Inverse of AttnProblem::describe(). UsageError naming `where` and the token.
AttnProblem parse_case(const std::string& text, const std::string& where);

// Reads a suite file: {"description": ..., "cases": [{"case": "...",
// "distributions": [...], "pass": ["fwd", "bwd"], "quick": bool, "backend": "cpu|cuda",
// "fp8_scaling": "tensor|head|block", "fp8_hadamard": bool (e4m3 cases only), "why": "..."}]}.
// UsageError with the file and the case index for anything malformed.
std::vector<CheckCase> load_suite(const std::string& path);

// The default suite file: configs/check.json from the working directory, else
// from the source tree the binary was built in (the build dir's parent).
std::string default_suite_path();

}  // namespace fa::check
