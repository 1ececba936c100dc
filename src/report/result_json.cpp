#include "report/result_json.h"

#include <climits>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/errors.h"
#include "report/input_file.h"
#include "report/json_limits.h"

namespace fa {

using nlohmann::json;

namespace {

// JSON has no NaN/Inf; nlohmann would write null and lose the difference
// between "not measured" and "infinite error", so write them as strings.
json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

struct Reader {
  const json& j;
  std::string where;

  const json& at(const char* key) const {
    auto it = j.find(key);
    if (it == j.end()) throw UsageError(fmt::format("{}: missing field '{}'", where, key));
    return *it;
  }
  [[noreturn]] void bad(const char* key, const char* want) const {
    throw UsageError(fmt::format("{}: field '{}' must be {}, got {}", where, key, want, at(key).dump()));
  }
  double d(const char* key) const {
    const json& v = at(key);
    if (v.is_number()) return v.get<double>();
    if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (v == "inf") return std::numeric_limits<double>::infinity();
    if (v == "-inf") return -std::numeric_limits<double>::infinity();
    bad(key, "a number");
  }
  int64_t i(const char* key) const {
    const json& v = at(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
      bad(key, "an integer");
    return v.get<int64_t>();
  }
  int i32(const char* key) const {
    const int64_t v = i(key);
    if (v < INT_MIN || v > INT_MAX) bad(key, "a 32-bit integer");
    return int(v);
  }
  uint64_t u(const char* key) const {
    const json& v = at(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      bad(key, "an unsigned integer");
    return v.get<uint64_t>();
  }
  bool b(const char* key) const {
    const json& v = at(key);
    if (!v.is_boolean()) bad(key, "true or false");
    return v.get<bool>();
  }
  std::string s(const char* key) const {
    const json& v = at(key);
    if (!v.is_string()) bad(key, "a string");
    return v.get<std::string>();
  }
  Reader sub(const char* key) const {
    const json& v = at(key);
    if (!v.is_object()) bad(key, "an object");
    return Reader{v, where + "." + key};
  }
  bool null(const char* key) const { return at(key).is_null(); }
};

json traffic_json(const Traffic& t) { return {{"read_bytes", t.read_bytes}, {"write_bytes", t.write_bytes}}; }
Traffic traffic_from(const Reader& r) { return Traffic{r.i("read_bytes"), r.i("write_bytes")}; }

}  // namespace

json result_to_json(const Result& r) {
  const AttnProblem& p = r.problem;
  json j;
  j["kernel"] = r.kernel;
  j["family"] = std::string(to_string(r.family));
  j["backend"] = std::string(to_string(r.backend));
  j["problem"] = {{"batch", p.batch},       {"heads", p.heads},       {"heads_kv", p.heads_kv},
                  {"seqlen_q", p.seqlen_q}, {"seqlen_k", p.seqlen_k}, {"head_dim", p.head_dim},
                  {"causal", p.causal},     {"dtype", std::string(to_string(p.dtype))},
                  {"softmax_scale", num(p.scale_f64())}};
  j["tile"] = {{"block_m", r.tile.block_m}, {"block_n", r.tile.block_n},
               {"warps", r.tile.warps},     {"stages", r.tile.stages}};
  j["status"] = std::string(to_string(r.status));
  j["reason"] = r.reason;
  if (r.timing) {
    const TimingSummary& t = *r.timing;
    j["timing"] = {{"median_ms", num(t.median_ms)}, {"min_ms", num(t.min_ms)},
                   {"p10_ms", num(t.p10_ms)},       {"p90_ms", num(t.p90_ms)},
                   {"mean_ms", num(t.mean_ms)},     {"stddev_ms", num(t.stddev_ms)},
                   {"samples", t.samples},          {"noise", num(t.noise)},
                   {"method", t.method}};
  } else {
    j["timing"] = nullptr;
  }
  j["tflops"] = num(r.tflops);
  j["matmul_fraction"] = num(r.matmul_fraction);
  j["traffic_model"] = traffic_json(r.traffic_model);
  j["model_bandwidth_gbps"] = num(r.model_bandwidth_gbps);
  j["traffic_measured"] = r.traffic_measured ? traffic_json(*r.traffic_measured) : json(nullptr);
  j["traffic_measured_source"] = r.traffic_measured_source;
  j["l2_hit_rate"] = r.l2_hit_rate ? json(*r.l2_hit_rate) : json(nullptr);
  j["peak_extra_bytes"] = r.peak_extra_bytes;
  if (r.errors) {
    const ErrorMetrics& e = *r.errors;
    j["errors"] = {{"o_max_abs", num(e.o_max_abs)},     {"o_max_rel", num(e.o_max_rel)},
                   {"o_rel_l2", num(e.o_rel_l2)},       {"lse_max_abs", num(e.lse_max_abs)},
                   {"lse_max_rel", num(e.lse_max_rel)}, {"nonfinite", e.nonfinite},
                   {"rows_checked", e.rows_checked},    {"sampled", e.sampled},
                   {"tolerance", num(e.tolerance)},     {"lse_tolerance", num(e.lse_tolerance)}};
  } else {
    j["errors"] = nullptr;
  }
  j["clock_before_mhz"] = r.clock_before_mhz;
  j["clock_after_mhz"] = r.clock_after_mhz;
  j["seed"] = r.seed;
  j["key"] = r.key();  // redundant but lets jq / scripts pair rows without our code
  return j;
}

Result result_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(fmt::format("{}: a result row must be an object", where));
  Reader r{j, where};
  Result out;
  out.kernel = r.s("kernel");
  auto fam = parse_family(r.s("family"));
  if (!fam) r.bad("family", "a family name");
  out.family = *fam;
  auto be = parse_backend(r.s("backend"));
  if (!be) r.bad("backend", "cpu or cuda");
  out.backend = *be;
  Reader p = r.sub("problem");
  out.problem.batch = p.i32("batch");
  out.problem.heads = p.i32("heads");
  out.problem.heads_kv = p.i32("heads_kv");
  out.problem.seqlen_q = p.i32("seqlen_q");
  out.problem.seqlen_k = p.i32("seqlen_k");
  out.problem.head_dim = p.i32("head_dim");
  out.problem.causal = p.b("causal");
  auto dt = parse_dtype(p.s("dtype"));
  if (!dt) p.bad("dtype", "bf16, fp16 or fp32");
  out.problem.dtype = *dt;
  out.problem.set_recorded_scale(p.d("softmax_scale"));
  if (std::string why = out.problem.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("{}.problem: {}", where, why));
  Reader t = r.sub("tile");
  out.tile = Tile{t.i32("block_m"), t.i32("block_n"), t.i32("warps"), t.i32("stages")};
  auto st = parse_status(r.s("status"));
  if (!st) r.bad("status", "ok, unsupported, oom, error or fail");
  out.status = *st;
  out.reason = r.s("reason");
  if (!r.null("timing")) {
    Reader m = r.sub("timing");
    TimingSummary s;
    s.median_ms = m.d("median_ms");
    s.min_ms = m.d("min_ms");
    s.p10_ms = m.d("p10_ms");
    s.p90_ms = m.d("p90_ms");
    s.mean_ms = m.d("mean_ms");
    s.stddev_ms = m.d("stddev_ms");
    s.samples = m.i32("samples");
    s.noise = m.d("noise");
    s.method = m.s("method");
    out.timing = s;
  }
  out.tflops = r.d("tflops");
  out.matmul_fraction = r.d("matmul_fraction");
  out.traffic_model = traffic_from(r.sub("traffic_model"));
  out.model_bandwidth_gbps = r.d("model_bandwidth_gbps");
  if (!r.null("traffic_measured")) out.traffic_measured = traffic_from(r.sub("traffic_measured"));
  out.traffic_measured_source = r.s("traffic_measured_source");
  // Absent in files written before the column existed.
  if (r.j.contains("l2_hit_rate") && !r.null("l2_hit_rate")) out.l2_hit_rate = r.d("l2_hit_rate");
  out.peak_extra_bytes = r.i("peak_extra_bytes");
  if (!r.null("errors")) {
    Reader e = r.sub("errors");
    ErrorMetrics m;
    m.o_max_abs = e.d("o_max_abs");
    m.o_max_rel = e.d("o_max_rel");
    m.o_rel_l2 = e.d("o_rel_l2");
    m.lse_max_abs = e.d("lse_max_abs");
    m.lse_max_rel = e.d("lse_max_rel");
    m.nonfinite = e.i("nonfinite");
    m.rows_checked = e.i("rows_checked");
    m.sampled = e.b("sampled");
    m.tolerance = e.d("tolerance");
    m.lse_tolerance = e.d("lse_tolerance");
    out.errors = m;
  }
  out.clock_before_mhz = r.i32("clock_before_mhz");
  out.clock_after_mhz = r.i32("clock_after_mhz");
  out.seed = r.u("seed");
  return out;
}

void check_unique_keys(const std::vector<Result>& rows, const std::string& path) {
  std::set<std::string> seen;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!seen.insert(rows[i].key()).second)
      throw UsageError(fmt::format("{}: results[{}] ({} on {}) appears twice; expected one row per kernel and "
                                   "problem",
                                   path, i, rows[i].kernel, rows[i].problem.describe()));
}

std::vector<Result> read_results_json(const std::string& path, json* metadata) {
  const json doc = parse_json_bounded(read_input_file(path, "results file", int64_t(1) << 32), path);
  if (!doc.is_object() || !doc.contains("schema_version") || !doc.contains("results"))
    throw UsageError(fmt::format("'{}' is not an fa-bench results file (no schema_version/results)", path));
  if (doc["schema_version"] != kResultsSchemaVersion)
    throw UsageError(fmt::format("'{}' has schema_version {}, this fa-bench reads {}", path,
                                 doc["schema_version"].dump(), kResultsSchemaVersion));
  if (!doc["results"].is_array())
    throw UsageError(fmt::format("'{}': \"results\" must be an array", path));
  std::vector<Result> rows;
  for (size_t i = 0; i < doc["results"].size(); ++i)
    rows.push_back(result_from_json(doc["results"][i], fmt::format("{}: results[{}]", path, i)));
  if (doc.contains("metadata") && !doc["metadata"].is_object())
    throw UsageError(fmt::format("'{}': \"metadata\" must be an object", path));
  if (metadata) *metadata = doc.contains("metadata") ? doc["metadata"] : json::object();
  return rows;
}

}  // namespace fa
