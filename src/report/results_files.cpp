#include "report/results_files.h"

#include "report/json_limits.h"
#include "report/output_path.h"
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
  write(false);
}

void ResultsFiles::add(const Result& r) {
  rows_.push_back(r);
  write(false);
}

void ResultsFiles::set_metadata(const std::string& key, nlohmann::json value) { metadata_[key] = std::move(value); }

void ResultsFiles::finish(const std::string& run_status) {
  metadata_["run_status"] = run_status;
  write(true);
}

void ResultsFiles::write(bool final) {
  // Rewriting the whole file per row is O(rows^2) bytes, but rows take
  // milliseconds to seconds each and a sweep has at most thousands: the
  // simplicity of "the file is always a complete document" wins. Standard
  // output ('-') gets one document, at the end.
  metadata_["end_time"] = utc_now_iso8601();
  metadata_["rows"] = rows_.size();
  auto due = [final](const std::string& path) { return !path.empty() && (final || path != "-"); };
  if (due(json_path_)) {
    nlohmann::json doc;
    doc["schema_version"] = kResultsSchemaVersion;
    doc["metadata"] = metadata_;
    doc["results"] = nlohmann::json::array();
    for (const auto& r : rows_) doc["results"].push_back(result_to_json(r));
    write_output(json_path_, dump_json(doc) + "\n");
  }
  if (due(csv_path_)) write_output(csv_path_, csv_document(rows_));
  if (due(md_path_)) write_output(md_path_, markdown_table(rows_));
}

}  // namespace fa
