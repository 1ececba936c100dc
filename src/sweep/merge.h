// Joining the files of one sweep run in pieces (--shard K/N on several machines,
// or resumed separately) into one result with the row set of an unsharded run.
// Every refusal is a UsageError, raised before anything is written: pieces of
// different plans (metadata.plan_hash), settings, seeds, back ends or fa-bench
// builds; of different devices unless allowed; split into different numbers of
// shards; a row twice; a row that is no point of the plan; and, when asked for
// a complete result, a row missing.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace fa {

struct MergePiece {
  std::string path;         // as given, for messages and metadata.merged_from
  nlohmann::json metadata;  // the file's metadata
  std::vector<Result> rows;
};

struct MergeOptions {
  bool complete = false;             // every row of the plan must be there
  bool allow_mixed_devices = false;  // pieces may come from devices of different names
  std::string command_line;          // the merge's, for metadata.command_line
};

struct MergedResults {
  nlohmann::json metadata;  // the first piece's, with the fields below replaced (docs/OUTPUTS.md)
  std::vector<Result> rows;  // in plan order
  std::string run_status;    // "complete", or "partial: R of P rows"
};

MergedResults merge_results(const std::vector<MergePiece>&, const MergeOptions&);

}  // namespace fa
