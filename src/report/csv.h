// Tidy CSV: one row per point x kernel, flat columns named like the Result
// fields (docs/OUTPUTS.md lists them). An absent value (no timing for a failed
// kernel, no measured traffic) is an empty cell.
#pragma once
#include <string>
#include <vector>

#include "core/result.h"

namespace fa {

// The columns of every document; device_index, device_name and device_uuid
// follow them in a document with a row that has a `device` (a run with --devices).
const std::vector<std::string>& csv_columns();
bool csv_has_device(const std::vector<Result>&);
std::string csv_header(bool with_device = false);                  // with trailing newline
std::string csv_row(const Result&, bool with_device = false);  // with trailing newline
std::string csv_document(const std::vector<Result>&);
// Reads a file written by csv_document (UsageError on a malformed file), so
// CSV is a full-fidelity format too (merge, round-trip tests).
std::vector<Result> read_results_csv(const std::string& path);

}  // namespace fa
