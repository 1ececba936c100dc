#include "report/results_files.h"

#include "report/atomic_file.h"
#include "report/csv.h"
#include "report/markdown.h"
#include "report/metadata.h"
#include "report/result_json.h"

namespace fa {

ResultsFiles::ResultsFiles(std::string json_path, std::string csv_path, std::string md_path,
                           nlohmann::json metadata, std::vector<Result> rows)
    : json_path_(std::move(json_path)),
      csv_path_(std::move(csv_path)),
      md_path_(std::move(md_path)),
      metadata_(std::move(metadata)),
      rows_(std::move(rows)) {
  write();
}

void ResultsFiles::add(const Result& r) {
  rows_.push_back(r);
  write();
}

void ResultsFiles::finish(const std::string& run_status) {
  metadata_["run_status"] = run_status;
  write();
}

void ResultsFiles::write() {
  // Rewriting the whole file per row is O(rows^2) bytes, but rows take
  // milliseconds to seconds each and a sweep has at most thousands: the
  // simplicity of "the file is always a complete document" wins.
  metadata_["end_time"] = utc_now_iso8601();
  metadata_["rows"] = rows_.size();
  if (!json_path_.empty()) {
    nlohmann::json doc;
    doc["schema_version"] = kResultsSchemaVersion;
    doc["metadata"] = metadata_;
    doc["results"] = nlohmann::json::array();
    for (const auto& r : rows_) doc["results"].push_back(result_to_json(r));
    write_file_atomic(json_path_, doc.dump(2) + "\n");
  }
  if (!csv_path_.empty()) write_file_atomic(csv_path_, csv_document(rows_));
  if (!md_path_.empty()) write_file_atomic(md_path_, markdown_table(rows_));
}

}  // namespace fa
