#include "report/result_json.h"

#include <climits>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"
#include "report/input_file.h"
#include "report/json_limits.h"
#include "report/row_values.h"

namespace fa {

using nlohmann::json;

namespace {

// JSON has no NaN/Inf; nlohmann would write null and lose the difference
// between "not measured" (null) and a measured infinite or NaN error, so those
// are written as the strings "inf", "-inf", "nan".
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
  // The key must be there; null stands for "absent" (src/report/row_values.h).
  double d_or(const char* key, double absent) const { return null(key) ? absent : d(key); }
  int i32_or(const char* key, int absent) const { return null(key) ? absent : i32(key); }
  std::string s_or(const char* key, const std::string& absent) const { return null(key) ? absent : s(key); }
};

json traffic_json(const Traffic& t) { return {{"read_bytes", t.read_bytes}, {"write_bytes", t.write_bytes}}; }

template <typename T>
json or_null(const std::optional<T>& v) {
  if (!v) return nullptr;
  if constexpr (std::is_same_v<T, double>) return num(*v);
  else return *v;
}
Traffic traffic_from(const Reader& r) { return Traffic{r.i("read_bytes"), r.i("write_bytes")}; }

// The figures `errors` and `errors_vs_unquantized` both hold, written and read
// by one pair of functions so the two objects cannot drift apart; `errors` adds
// lse_max_rel, the rows checked and the tolerances it was held to.
json error_figures_json(const ErrorMetrics& e) {
  return {{"o_max_abs", num(e.o_max_abs)},
          {"o_max_rel", num(e.o_max_rel)},
          {"o_rel_l2", num(e.o_rel_l2)},
          {"lse_max_abs", num(e.lse_max_abs)},
          {"nonfinite", e.nonfinite}};
}

ErrorMetrics error_figures_from(const Reader& r) {
  ErrorMetrics m;
  m.o_max_abs = r.d("o_max_abs");
  m.o_max_rel = r.d("o_max_rel");
  m.o_rel_l2 = r.d("o_rel_l2");
  m.lse_max_abs = r.d("lse_max_abs");
  m.nonfinite = r.i("nonfinite");
  return m;
}

// The keys of one gradient tensor are the CSV's columns: dq_max_abs, ...
const std::pair<const char*, TensorErrors GradErrors::*> kGradTensors[] = {
    {"dq", &GradErrors::dq}, {"dk", &GradErrors::dk}, {"dv", &GradErrors::dv}};

json grad_errors_json(const GradErrors& g) {
  json j;
  for (const auto& [x, field] : kGradTensors) {
    const TensorErrors& t = g.*field;
    const std::string k = x;
    j[k + "_max_abs"] = num(t.max_abs);
    j[k + "_max_rel"] = num(t.max_rel);
    j[k + "_rel_l2"] = num(t.rel_l2);
    j[k + "_nonfinite"] = t.nonfinite;
    j[k + "_tolerance"] = num(t.tolerance);
  }
  j["cols_checked"] = g.cols_checked;
  return j;
}

GradErrors grad_errors_from(const Reader& r) {
  GradErrors g;
  for (const auto& [x, field] : kGradTensors) {
    TensorErrors& t = g.*field;
    const std::string k = x;
    t.max_abs = r.d((k + "_max_abs").c_str());
    t.max_rel = r.d((k + "_max_rel").c_str());
    t.rel_l2 = r.d((k + "_rel_l2").c_str());
    t.nonfinite = r.i((k + "_nonfinite").c_str());
    t.tolerance = r.d((k + "_tolerance").c_str());
  }
  g.cols_checked = r.i("cols_checked");
  return g;
}

// The FP8 settings of an e4m3 row: both fields or neither (a file written
// before rows carried them; read_results_json fills them in from its config).
std::optional<Fp8Settings> fp8_from(const Reader& r, DType dtype) {
  const bool scaling = r.j.contains("fp8_scaling"), hadamard = r.j.contains("fp8_hadamard");
  if (!scaling && !hadamard) return std::nullopt;
  if (dtype != DType::e4m3)
    throw UsageError(fmt::format("{}: a {} row has FP8 settings; expected fp8_scaling and fp8_hadamard on e4m3 "
                                 "rows only",
                                 r.where, to_string(dtype)));
  Fp8Settings s;
  const auto mode = parse_fp8_scaling(r.s("fp8_scaling"));
  if (!mode) r.bad("fp8_scaling", "tensor, head or block");
  s.fp8_scaling = *mode;
  s.fp8_hadamard = r.b("fp8_hadamard");
  return s;
}

// e4m3 rows of a file written before rows carried their FP8 settings: the
// run's own, from metadata.config, where the sweep recorded them; else the
// defaults, which fa-check and a sweep without the settings used.
void fill_fp8_settings(std::vector<Result>& rows, const json& doc, const std::string& path) {
  const json* config = nullptr;
  if (doc.contains("metadata") && doc["metadata"].is_object() && doc["metadata"].contains("config") &&
      doc["metadata"]["config"].is_object())
    config = &doc["metadata"]["config"];
  for (Result& r : rows) {
    if (r.problem.dtype != DType::e4m3 || r.fp8) continue;
    Fp8Settings s;
    if (config && config->contains("fp8_scaling")) {
      const Reader c{*config, path + ": metadata.config"};
      const auto mode = parse_fp8_scaling(c.s("fp8_scaling"));
      if (!mode) c.bad("fp8_scaling", "tensor, head or block");
      s.fp8_scaling = *mode;
    }
    if (config && config->contains("fp8_hadamard"))
      s.fp8_hadamard = Reader{*config, path + ": metadata.config"}.b("fp8_hadamard");
    r.fp8 = s;
  }
}

}  // namespace

json result_to_json(const Result& r) {
  const AttnProblem& p = r.problem;
  json j;
  j["kernel"] = r.kernel;
  j["family"] = std::string(to_string(r.family));
  j["backend"] = std::string(to_string(r.backend));
  j["pass"] = std::string(to_string(r.pass));
  j["fwd_kernel"] = or_null(row_values::text(r.fwd_kernel));
  j["problem"] = {{"batch", p.batch},       {"heads", p.heads},       {"heads_kv", p.heads_kv},
                  {"seqlen_q", p.seqlen_q}, {"seqlen_k", p.seqlen_k}, {"head_dim", p.head_dim},
                  {"causal", p.causal},     {"dtype", std::string(to_string(p.dtype))},
                  {"softmax_scale", num(p.scale_f64())}};
  // Only e4m3 rows carry them; other rows' JSON and keys stay as they were.
  if (r.fp8) {
    j["fp8_scaling"] = std::string(to_string(r.fp8->fp8_scaling));
    j["fp8_hadamard"] = r.fp8->fp8_hadamard;
  }
  if (r.distribution) j["distribution"] = std::string(to_string(*r.distribution));  // fa-check's rows
  namespace rv = row_values;
  j["tile"] = {{"block_m", or_null(rv::tile_field(r.tile.block_m))},
               {"block_n", or_null(rv::tile_field(r.tile.block_n))},
               {"warps", or_null(rv::tile_field(r.tile.warps))},
               {"stages", or_null(rv::tile_field(r.tile.stages))}};
  j["status"] = std::string(to_string(r.status));
  j["reason"] = or_null(rv::text(r.reason));
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
  j["tflops"] = or_null(rv::tflops(r));
  j["matmul_fraction"] = or_null(rv::matmul_fraction(r));
  const std::optional<Traffic> model = rv::traffic_model(r);
  j["traffic_model"] = model ? traffic_json(*model) : json(nullptr);
  j["model_bandwidth_gbps"] = or_null(rv::model_bandwidth_gbps(r));
  j["traffic_measured"] = r.traffic_measured ? traffic_json(*r.traffic_measured) : json(nullptr);
  j["traffic_measured_source"] = or_null(rv::text(r.traffic_measured_source));
  j["l2_hit_rate_pct"] = or_null(r.l2_hit_rate_pct);
  j["peak_extra_bytes"] = or_null(rv::peak_extra_bytes(r));
  if (r.errors) {
    const ErrorMetrics& e = *r.errors;
    json& ej = j["errors"] = error_figures_json(e);
    ej["lse_max_rel"] = num(e.lse_max_rel);
    ej["rows_checked"] = e.rows_checked;
    ej["sampled"] = e.sampled;
    const Tolerances t = r.tolerances.value_or(Tolerances{});
    ej["tolerance"] = num(t.tolerance);
    ej["lse_tolerance"] = num(t.lse_tolerance);
  } else {
    j["errors"] = nullptr;
  }
  // Only e4m3 rows carry it; other rows' JSON stays as it was.
  if (r.errors_vs_unquantized) j["errors_vs_unquantized"] = error_figures_json(*r.errors_vs_unquantized);
  j["grad_errors"] = r.grad_errors ? grad_errors_json(*r.grad_errors) : json(nullptr);
  j["clock_before_mhz"] = or_null(rv::clock_mhz(r.clock_before_mhz));
  j["clock_after_mhz"] = or_null(rv::clock_mhz(r.clock_after_mhz));
  j["seed"] = r.seed;
  // Only a run with --devices records where each row ran; other files stay as they were.
  if (r.device)
    j["device"] = {{"index", r.device->index},
                   {"name", r.device->name},
                   {"uuid", or_null(row_values::text(r.device->uuid))}};
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
  auto ps = parse_pass(r.s("pass"));
  if (!ps) r.bad("pass", "fwd, bwd or fwd+bwd");
  out.pass = *ps;
  out.fwd_kernel = r.s_or("fwd_kernel", "");
  Reader p = r.sub("problem");
  out.problem.batch = p.i32("batch");
  out.problem.heads = p.i32("heads");
  out.problem.heads_kv = p.i32("heads_kv");
  out.problem.seqlen_q = p.i32("seqlen_q");
  out.problem.seqlen_k = p.i32("seqlen_k");
  out.problem.head_dim = p.i32("head_dim");
  out.problem.causal = p.b("causal");
  auto dt = parse_dtype(p.s("dtype"));
  if (!dt) p.bad("dtype", "bf16, fp16, fp32 or e4m3");
  out.problem.dtype = *dt;
  out.problem.set_recorded_scale(p.d("softmax_scale"));
  if (std::string why = out.problem.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("{}.problem: {}", where, why));
  out.fp8 = fp8_from(r, out.problem.dtype);
  if (r.j.contains("distribution") && !r.null("distribution")) {
    const auto d = parse_distribution(r.s("distribution"));
    if (!d) r.bad("distribution", distribution_names().c_str());
    out.distribution = *d;
  }
  Reader t = r.sub("tile");
  out.tile = Tile{t.i32_or("block_m", 0), t.i32_or("block_n", 0), t.i32_or("warps", 0), t.i32_or("stages", 0)};
  auto st = parse_status(r.s("status"));
  if (!st) r.bad("status", "ok, unsupported, oom, error or fail");
  out.status = *st;
  out.reason = r.s_or("reason", "");
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
  out.tflops = r.d_or("tflops", 0);
  out.matmul_fraction = r.d_or("matmul_fraction", 0);
  if (!r.null("traffic_model")) out.traffic_model = traffic_from(r.sub("traffic_model"));
  out.model_bandwidth_gbps = r.d_or("model_bandwidth_gbps", 0);
  if (!r.null("traffic_measured")) out.traffic_measured = traffic_from(r.sub("traffic_measured"));
  out.traffic_measured_source = r.s_or("traffic_measured_source", "");
  if (!r.null("l2_hit_rate_pct")) out.l2_hit_rate_pct = r.d("l2_hit_rate_pct");
  out.peak_extra_bytes = r.null("peak_extra_bytes") ? -1 : r.i("peak_extra_bytes");
  if (!r.null("errors")) {
    Reader e = r.sub("errors");
    ErrorMetrics m = error_figures_from(e);
    m.lse_max_rel = e.d("lse_max_rel");
    m.rows_checked = e.i("rows_checked");
    m.sampled = e.b("sampled");
    out.errors = m;
    out.tolerances = Tolerances{e.d("tolerance"), e.d("lse_tolerance")};
  }
  if (j.contains("errors_vs_unquantized") && !r.null("errors_vs_unquantized"))
    out.errors_vs_unquantized = error_figures_from(r.sub("errors_vs_unquantized"));
  if (!r.null("grad_errors")) out.grad_errors = grad_errors_from(r.sub("grad_errors"));
  share_checked_rows(out);
  out.clock_before_mhz = r.i32_or("clock_before_mhz", -1);
  out.clock_after_mhz = r.i32_or("clock_after_mhz", -1);
  out.seed = r.u("seed");
  if (j.contains("device") && !r.null("device")) {
    Reader d = r.sub("device");
    DeviceIdentity dev;
    dev.index = d.i32("index");
    if (dev.index < 0) d.bad("index", "a device number (0 or more)");
    dev.name = d.s("name");
    dev.uuid = d.s_or("uuid", "");
    out.device = dev;
  }
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
  fill_fp8_settings(rows, doc, path);
  if (metadata) *metadata = doc.contains("metadata") ? doc["metadata"] : json::object();
  return rows;
}

}  // namespace fa
