// fa-check's outputs: a table line per row on stdout, and the --json / --csv
// files (the sweep's writers, plus the two things a check row has that a sweep
// row does not: its input distribution and the LSE relative-L2 error).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/fa_check/check_run.h"

namespace fa::check {

std::string table_header();
std::string table_row(const CheckRow&);

// {"schema_version", "metadata", "results": [sweep rows, each with its
// "distribution" (Result::distribution)]}: read_results_json (and so `fa-bench
// compare`, which pairs rows per distribution) reads it.
void write_check_json(const std::string& path, const nlohmann::json& metadata, const std::vector<CheckRow>&);
// The sweep's CSV columns, then distribution and lse_rel_l2.
void write_check_csv(const std::string& path, const std::vector<CheckRow>&);

}  // namespace fa::check
