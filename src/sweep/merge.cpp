#include "sweep/merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "report/json_limits.h"
#include "report/result_json.h"
#include "sweep/config.h"
#include "sweep/resume.h"
#include "sweep/values.h"

namespace fa {

using nlohmann::json;

namespace {

// Config keys that say where a piece wrote its files, how long it could run or
// which slice it ran, not how a row was made: pieces may differ in them.
const char* const kPieceKeys[] = {"json", "csv", "md", "save_outputs", "timeout", "cooldown", "shard"};

const json& field(const json& obj, const char* key) {
  static const json null;
  if (!obj.is_object()) return null;
  auto it = obj.find(key);
  return it == obj.end() ? null : *it;
}

// A count or seed: JSON read from a file holds it unsigned, one built in code maybe signed.
bool non_negative_integer(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

std::string text_field(const json& obj, const char* key) {
  const json& v = field(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

json without_piece_keys(json config) {
  if (config.is_object())
    for (const char* k : kPieceKeys) config.erase(k);
  return config;
}

struct PieceInfo {
  std::string plan_hash;
  size_t plan_rows = 0;
  std::optional<Shard> shard;
  std::string device;  // metadata.device.name
};

PieceInfo piece_info(const MergePiece& p) {
  const json& m = p.metadata;
  PieceInfo info;
  const json& hash = field(m, "plan_hash");
  if (!hash.is_string() || hash.get<std::string>().empty())
    throw UsageError(fmt::format("merge: '{}' has no metadata.plan_hash; expected a results file written by "
                                 "`fa-bench sweep --json` of this version (fa-check's files have no plan)",
                                 p.path));
  info.plan_hash = hash.get<std::string>();
  const json& rows = field(m, "plan_rows");
  if (!non_negative_integer(rows))
    throw UsageError(fmt::format("merge: '{}': metadata.plan_rows is {}; expected the plan's row count",
                                 p.path, dump_json(rows, -1)));
  info.plan_rows = rows.get<size_t>();
  const json& shard = field(m, "shard");
  if (!shard.is_null()) {
    if (!shard.is_string())
      throw UsageError(fmt::format("merge: '{}': metadata.shard is {}; expected \"K/N\" or null", p.path,
                                   dump_json(shard, -1)));
    info.shard = parse_shard(shard.get<std::string>(), fmt::format("merge: '{}': metadata.shard", p.path));
  }
  info.device = text_field(field(m, "device"), "name");
  return info;
}

// What resume_differences compares, read from a piece's metadata (its slice left out).
RunIdentity identity_of(const MergePiece& p) {
  const json& m = p.metadata;
  const json& seed = field(m, "seed");
  if (!non_negative_integer(seed))
    throw UsageError(fmt::format("merge: '{}': metadata.seed is {}; expected the sweep's seed", p.path,
                                 dump_json(seed, -1)));
  return RunIdentity{without_piece_keys(field(m, "config")), seed.get<uint64_t>(), text_field(m, "backend"),
                     text_field(m, "version"), text_field(m, "git_commit")};
}

// A point's identity among rows: the problem alone.
std::string point_key(const AttnProblem& p) {
  Result r;
  r.problem = p;
  return r.key();
}

// The settings the first piece recorded, resolved: the plan's points and the
// FP8 settings of its e4m3 rows. The user's tensors (`inputs`) fixed the shape
// axes, which the config holds, so the points need not the tensors themselves.
SweepConfig planned_config(const MergePiece& p) {
  json config = field(p.metadata, "config");
  if (!config.is_object())
    throw UsageError(fmt::format("merge: '{}': metadata.config is {}; expected the sweep's settings", p.path,
                                 config.type_name()));
  for (const char* k : {"json", "csv", "md", "save_outputs", "inputs"}) config.erase(k);
  return resolve_config(config_from_json(config, p.path + ": metadata.config"));
}

// One value when every piece agrees, else each distinct one, in piece order.
std::string joined_distinct(const std::vector<MergePiece>& pieces, const char* key) {
  std::vector<std::string> seen;
  for (const MergePiece& p : pieces) {
    const std::string v = text_field(p.metadata, key);
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
  return fmt::format("{}", fmt::join(seen, ", "));
}

json merged_metadata(const std::vector<MergePiece>& pieces, const std::vector<PieceInfo>& info,
                     const MergeOptions& o, size_t rows, const std::string& run_status) {
  json m = pieces[0].metadata;
  m["command_line"] = o.command_line;
  json config = without_piece_keys(field(m, "config"));
  m["config"] = config;
  m["shard"] = nullptr;
  m["rows"] = rows;
  m["run_status"] = run_status;
  // The shards' wall time split, summed (work done, not elapsed: shards overlap);
  // null when a file has none.
  json wall = json::object();
  for (const MergePiece& p : pieces) {
    const auto it = p.metadata.find("wall_time_s");
    if (it == p.metadata.end() || !it->is_object()) {
      wall = nullptr;
      break;
    }
    for (const char* k : {"inputs", "reference", "validation", "timing"}) {
      const auto v = it->find(k);
      if (v == it->end() || !v->is_number()) {
        wall = nullptr;
        break;
      }
      wall[k] = wall.value(k, 0.0) + v->get<double>();
    }
    if (wall.is_null()) break;
  }
  m["wall_time_s"] = wall;
  // The span of the pieces' runs.
  std::string start, end;
  for (const MergePiece& p : pieces) {
    const std::string s = text_field(p.metadata, "start_time"), e = text_field(p.metadata, "end_time");
    if (!s.empty() && (start.empty() || s < start)) start = s;
    if (e > end) end = e;
  }
  m["start_time"] = start.empty() ? json(nullptr) : json(start);
  m["end_time"] = end.empty() ? json(nullptr) : json(end);
  m["host_name"] = joined_distinct(pieces, "host_name");
  m["cpu_model"] = joined_distinct(pieces, "cpu_model");
  std::set<std::string> devices;
  for (const PieceInfo& i : info) devices.insert(i.device);
  if (devices.size() > 1)
    m["device"] = {{"name", fmt::format("mixed: {}", fmt::join(devices, ", "))},
                   {"details", "rows from several devices (--allow-mixed-devices); metadata.merged_from names "
                               "each file's device"}};
  // The device's ceilings are measured per run (each row's matmul_fraction used
  // its own piece's): a merged file states one only where every piece measured it alike.
  for (const char* ceiling : {"matmul_ceiling_tflops", "copy_bandwidth_gbps"})
    for (const MergePiece& p : pieces)
      if (field(p.metadata, ceiling) != field(m, ceiling)) m[ceiling] = nullptr;
  json from = json::array();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const json& pm = pieces[i].metadata;
    from.push_back({{"file", pieces[i].path},
                    {"shard", info[i].shard ? json(info[i].shard->str()) : json(nullptr)},
                    {"rows", pieces[i].rows.size()},
                    {"run_status", field(pm, "run_status")},
                    {"host_name", field(pm, "host_name")},
                    {"device", field(pm, "device")},
                    {"start_time", field(pm, "start_time")},
                    {"end_time", field(pm, "end_time")},
                    {"matmul_ceiling_tflops", field(pm, "matmul_ceiling_tflops")},
                    {"copy_bandwidth_gbps", field(pm, "copy_bandwidth_gbps")}});
  }
  m["merged_from"] = from;
  return m;
}

}  // namespace

MergedResults merge_results(const std::vector<MergePiece>& pieces, const MergeOptions& o) {
  if (pieces.empty()) throw UsageError("merge: no files; expected the results files of one sweep's shards");
  std::vector<PieceInfo> info;
  for (const MergePiece& p : pieces) {
    info.push_back(piece_info(p));
    check_unique_keys(p.rows, p.path);
  }

  // One sweep: one plan, made the same way by the same build.
  const MergePiece& first = pieces[0];
  json first_meta = first.metadata;
  first_meta["config"] = without_piece_keys(field(first_meta, "config"));
  identity_of(first);  // its seed is well formed, so a difference below is a real one
  for (size_t i = 1; i < pieces.size(); ++i) {
    std::vector<std::string> diffs;
    if (info[i].plan_hash != info[0].plan_hash)
      diffs.push_back(fmt::format("plan_hash \"{}\" -> \"{}\"", info[0].plan_hash, info[i].plan_hash));
    else if (info[i].plan_rows != info[0].plan_rows)
      diffs.push_back(fmt::format("plan_rows {} -> {}", info[0].plan_rows, info[i].plan_rows));
    for (std::string& d : resume_differences(first_meta, identity_of(pieces[i]))) diffs.push_back(std::move(d));
    if (!diffs.empty())
      throw UsageError(fmt::format("merge: '{}' and '{}' are not pieces of one sweep: {}; expected files of one "
                                   "plan, run with the same settings, seed, back end and fa-bench build",
                                   first.path, pieces[i].path, fmt::join(diffs, "; ")));
  }
  for (size_t i = 1; i < pieces.size(); ++i)
    if (info[i].device != info[0].device && !o.allow_mixed_devices)
      throw UsageError(fmt::format("merge: '{}' ran on '{}' and '{}' on '{}': timings of different devices are "
                                   "not one result (--allow-mixed-devices to merge them anyway)",
                                   first.path, info[0].device, pieces[i].path, info[i].device));
  const PieceInfo* sharded = nullptr;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!info[i].shard) continue;
    if (sharded && sharded->shard->count != info[i].shard->count)
      throw UsageError(fmt::format("merge: '{}' is shard {} and '{}' shard {}: the plan was split two ways; "
                                   "expected the shards of one split (the same N)",
                                   pieces[size_t(sharded - info.data())].path, sharded->shard->str(),
                                   pieces[i].path, info[i].shard->str()));
    if (!sharded) sharded = &info[i];
  }

  // Each row once, and each of the plan.
  std::map<std::string, std::pair<size_t, size_t>> seen;  // key -> piece, row
  for (size_t i = 0; i < pieces.size(); ++i)
    for (size_t j = 0; j < pieces[i].rows.size(); ++j) {
      const Result& r = pieces[i].rows[j];
      auto [it, fresh] = seen.emplace(r.key(), std::make_pair(i, j));
      if (!fresh)
        throw UsageError(fmt::format(
            "merge: the {} row of {} on {} is in '{}' (results[{}]) and in '{}' (results[{}]); expected each row "
            "once (a resumed file holds the rows it resumed: give it, not the file it continued)",
            to_string(r.pass), r.kernel, r.problem.describe(), pieces[it->second.first].path, it->second.second,
            pieces[i].path, j));
    }
  const SweepConfig planned = planned_config(first);
  const std::vector<AttnProblem> points = expand_points(planned);
  std::map<std::string, size_t> point_index;
  for (size_t k = 0; k < points.size(); ++k) point_index.emplace(point_key(points[k]), k);

  // Plan order: by point, then (a point's rows being one piece's, in plan order) as the pieces hold them.
  std::vector<std::tuple<size_t, int, size_t, size_t>> order;  // point, shard, piece, row
  std::vector<bool> point_seen(points.size(), false);
  for (size_t i = 0; i < pieces.size(); ++i)
    for (size_t j = 0; j < pieces[i].rows.size(); ++j) {
      const Result& r = pieces[i].rows[j];
      auto it = point_index.find(point_key(r.problem));
      if (it == point_index.end())
        throw UsageError(fmt::format("merge: '{}': results[{}] ({} on {}) is not a point of the sweep its "
                                     "metadata.config describes; expected rows of the plan only (a row kept by "
                                     "--resume-allow-changes?)",
                                     pieces[i].path, j, r.kernel, r.problem.describe()));
      // A row of inputs quantized otherwise is another measurement of the point, not a row of this plan.
      if (r.fp8 != planned.fp8_settings(r.problem.dtype))
        throw UsageError(fmt::format("merge: '{}': results[{}] ({} on {}) was made with {}, and the sweep its "
                                     "metadata.config describes with {}; expected rows of the plan only (a row "
                                     "kept by --resume-allow-changes?)",
                                     pieces[i].path, j, r.kernel, r.problem.describe(), describe(r.fp8),
                                     describe(planned.fp8_settings(r.problem.dtype))));
      point_seen[it->second] = true;
      order.emplace_back(it->second, info[i].shard ? info[i].shard->index : 0, i, j);
    }
  std::sort(order.begin(), order.end());
  MergedResults out;
  for (const auto& [point, shard, i, j] : order) out.rows.push_back(pieces[i].rows[j]);

  const size_t plan_rows = info[0].plan_rows;
  if (o.complete && out.rows.size() != plan_rows) {
    std::vector<std::string> why;
    if (sharded) {
      std::set<int> given;
      for (const PieceInfo& pi : info)
        if (pi.shard) given.insert(pi.shard->index);
      std::vector<std::string> absent;
      for (int k = 1; k <= sharded->shard->count; ++k)
        if (!given.count(k)) absent.push_back(Shard{k, sharded->shard->count}.str());
      if (!absent.empty()) why.push_back(fmt::format("no file of shard {}", fmt::join(absent, ", ")));
    }
    for (const MergePiece& p : pieces)
      if (text_field(p.metadata, "run_status") != "complete")
        why.push_back(fmt::format("'{}' ended {}", p.path, dump_json(field(p.metadata, "run_status"), -1)));
    std::vector<std::string> empty_points;
    for (size_t k = 0; k < points.size(); ++k)
      if (!point_seen[k]) empty_points.push_back(points[k].describe());
    if (!empty_points.empty())
      why.push_back(fmt::format("{} points without a row, such as {}", empty_points.size(),
                                fmt::join(empty_points.begin(),
                                          empty_points.begin() + std::min<ptrdiff_t>(3, ptrdiff_t(empty_points.size())),
                                          ", ")));
    throw UsageError(fmt::format("merge --complete: {} rows here, the plan has {}{}; expected every row of the "
                                 "plan (without --complete the partial result is written, and `fa-bench sweep "
                                 "--resume` on it runs the rest)",
                                 out.rows.size(), plan_rows,
                                 why.empty() ? "" : fmt::format(" ({})", fmt::join(why, "; "))));
  }
  out.run_status =
      out.rows.size() == plan_rows ? "complete" : fmt::format("partial: {} of {} rows", out.rows.size(), plan_rows);
  out.metadata = merged_metadata(pieces, info, o, out.rows.size(), out.run_status);
  return out;
}

}  // namespace fa
