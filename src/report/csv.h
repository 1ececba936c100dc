// Tidy CSV: one row per point x kernel, flat columns named like the Result
// fields (docs/OUTPUTS.md lists them). An absent value (no timing for a failed
// kernel, no measured traffic) is an empty cell.
#pragma once
#include <string>
#include <vector>

#include "core/result.h"

namespace fa {

// The columns of every document. Two groups are written only in a document
// with a row that has them, so files of other runs keep their columns:
// fp8_scaling and fp8_hadamard (after softmax_scale) where a row has FP8
// settings (e4m3), and device_index, device_name, device_uuid (last) where a
// row has a `device` (a run with --devices).
const std::vector<std::string>& csv_columns();
struct CsvLayout {
  bool fp8 = false;
  bool device = false;
  void include(const Result& r) {
    fp8 = fp8 || r.fp8.has_value();
    device = device || r.device.has_value();
  }
};
CsvLayout csv_layout(const std::vector<Result>&);
std::string csv_header(CsvLayout = {});                  // with trailing newline
std::string csv_row(const Result&, CsvLayout = {});  // with trailing newline
std::string csv_document(const std::vector<Result>&);
// Reads a file written by csv_document (UsageError on a malformed file), so
// CSV is a full-fidelity format too (merge, round-trip tests).
std::vector<Result> read_results_csv(const std::string& path);

}  // namespace fa
