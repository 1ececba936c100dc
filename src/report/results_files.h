// The sweep's output files, rewritten atomically after every row so an
// interrupted or crashed sweep leaves valid JSON/CSV/Markdown holding every
// finished row.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace fa {

class ResultsFiles {
 public:
  // Empty paths are skipped; '-' is standard output, written once by finish().
  // `rows` are earlier results (from --resume) that the files start with.
  // Writes the files once immediately.
  ResultsFiles(std::string json_path, std::string csv_path, std::string md_path,
               nlohmann::json metadata, std::vector<Result> rows);
  void add(const Result&);
  // Sets one metadata key, written with the next row or finish().
  void set_metadata(const std::string& key, nlohmann::json value);
  // "complete", "interrupted", "stopped: <why>": recorded in metadata.run_status.
  void finish(const std::string& run_status);
  const std::vector<Result>& rows() const { return rows_; }

 private:
  void write(bool final);
  std::string json_path_, csv_path_, md_path_;
  nlohmann::json metadata_;
  std::vector<Result> rows_;
};

}  // namespace fa
