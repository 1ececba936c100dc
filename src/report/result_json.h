// A Result as JSON (one object per row of the "results" array) and back; the
// schema is in docs/OUTPUTS.md. Field names are the C++ field names.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace fa {

// 2: absent values are null (not 0, -1 or ""), l2_hit_rate became
// l2_hit_rate_pct, softmax_scale is the scale used.
constexpr int kResultsSchemaVersion = 2;

nlohmann::json result_to_json(const Result&);
// Throws UsageError naming the missing/mistyped field (context: `where`).
Result result_from_json(const nlohmann::json&, const std::string& where);

// Two rows with one Result::key() cannot be paired or resumed (the second would
// silently stand for the first): UsageError naming the file and the row.
void check_unique_keys(const std::vector<Result>& rows, const std::string& path);

// Reads a results file written by `fa-bench sweep --json`. Fills *metadata when
// given. UsageError for a missing/malformed file or another schema_version.
std::vector<Result> read_results_json(const std::string& path, nlohmann::json* metadata);

}  // namespace fa
