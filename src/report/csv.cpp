#include "report/csv.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>

#include "core/errors.h"
#include "report/row_values.h"

namespace fa {

namespace {

// fmt's "{}" is the shortest text that reads back to the same double.
std::string d2s(double v) { return fmt::format("{}", v); }

double s2d(const std::string& s, const std::string& col) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);  // accepts nan / inf as written by fmt
  if (s.empty() || end != s.c_str() + s.size())
    throw UsageError(fmt::format("column '{}': '{}' is not a number", col, s));
  return v;
}
int64_t s2i(const std::string& s, const std::string& col) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    throw UsageError(fmt::format("column '{}': '{}' is not an integer", col, s));
  return v;
}
bool s2b(const std::string& s, const std::string& col) {
  if (s == "true") return true;
  if (s == "false") return false;
  throw UsageError(fmt::format("column '{}': '{}' is not true/false", col, s));
}

struct Column {
  std::string name;
  std::function<std::string(const Result&)> get;
  std::function<void(Result&, const std::string&)> set;  // called only for non-empty cells
};

template <typename T>
std::string cell(const std::optional<T>& v) {
  if (!v) return "";
  if constexpr (std::is_same_v<T, double>) return d2s(*v);
  else return std::to_string(*v);
}

namespace rv = row_values;

TimingSummary& timing(Result& r) {
  if (!r.timing) r.timing.emplace();
  return *r.timing;
}
ErrorMetrics& errs(Result& r) {
  if (!r.errors) r.errors.emplace();
  return *r.errors;
}
Tolerances& tols(Result& r) {
  if (!r.tolerances) r.tolerances.emplace();
  return *r.tolerances;
}
Traffic& measured(Result& r) {
  if (!r.traffic_measured) r.traffic_measured.emplace();
  return *r.traffic_measured;
}
// One field of the modelled traffic, absent with the model.
std::optional<int64_t> modelled(const Result& r, int64_t Traffic::*field) {
  const std::optional<Traffic> t = rv::traffic_model(r);
  return t ? std::optional<int64_t>((*t).*field) : std::nullopt;
}
ErrorMetrics& unquantized(Result& r) {
  if (!r.errors_vs_unquantized) r.errors_vs_unquantized.emplace();
  return *r.errors_vs_unquantized;
}
GradErrors& grads(Result& r) {
  if (!r.grad_errors) r.grad_errors.emplace();
  return *r.grad_errors;
}

// Helpers to declare a column of an optional group in one line.
#define FA_INT(NAME, EXPR)                                                   \
  Column{NAME, [](const Result& r) { return std::to_string(EXPR); },       \
         [](Result& r, const std::string& s) { EXPR = decltype(EXPR)(s2i(s, NAME)); }}
#define FA_OPT_DBL(NAME, OPT, FIELD, GROUP)                                  \
  Column{NAME, [](const Result& r) { return r.OPT ? d2s(r.OPT->FIELD) : std::string(); }, \
         [](Result& r, const std::string& s) { GROUP(r).FIELD = s2d(s, NAME); }}
// A value written as an empty cell when absent (src/report/row_values.h).
#define FA_OR_EMPTY(NAME, OPTIONAL, FIELD, PARSE)                            \
  Column{NAME, [](const Result& r) { return cell(OPTIONAL); },             \
         [](Result& r, const std::string& s) { FIELD = decltype(FIELD)(PARSE(s, NAME)); }}
#define FA_OPT_INT(NAME, OPT, FIELD, GROUP)                                  \
  Column{NAME, [](const Result& r) { return r.OPT ? std::to_string(r.OPT->FIELD) : std::string(); }, \
         [](Result& r, const std::string& s) { GROUP(r).FIELD = decltype(GROUP(r).FIELD)(s2i(s, NAME)); }}

// The five columns of one gradient tensor X (dq, dk, dv): X_max_abs, ...
#define FA_GRAD_COLUMNS(X)                                          \
  FA_OPT_DBL(#X "_max_abs", grad_errors, X.max_abs, grads),         \
      FA_OPT_DBL(#X "_max_rel", grad_errors, X.max_rel, grads),     \
      FA_OPT_DBL(#X "_rel_l2", grad_errors, X.rel_l2, grads),       \
      FA_OPT_INT(#X "_nonfinite", grad_errors, X.nonfinite, grads), \
      FA_OPT_DBL(#X "_tolerance", grad_errors, X.tolerance, grads)

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      Column{"kernel", [](const Result& r) { return r.kernel; },
             [](Result& r, const std::string& s) { r.kernel = s; }},
      Column{"family", [](const Result& r) { return std::string(to_string(r.family)); },
             [](Result& r, const std::string& s) {
               auto f = parse_family(s);
               if (!f) throw UsageError(fmt::format("column 'family': unknown '{}'", s));
               r.family = *f;
             }},
      Column{"backend", [](const Result& r) { return std::string(to_string(r.backend)); },
             [](Result& r, const std::string& s) {
               auto b = parse_backend(s);
               if (!b) throw UsageError(fmt::format("column 'backend': unknown '{}'", s));
               r.backend = *b;
             }},
      Column{"pass", [](const Result& r) { return std::string(to_string(r.pass)); },
             [](Result& r, const std::string& s) {
               auto p = parse_pass(s);
               if (!p) throw UsageError(fmt::format("column 'pass': unknown '{}'", s));
               r.pass = *p;
             }},
      Column{"fwd_kernel", [](const Result& r) { return r.fwd_kernel; },
             [](Result& r, const std::string& s) { r.fwd_kernel = s; }},
      FA_INT("batch", r.problem.batch),
      FA_INT("heads", r.problem.heads),
      FA_INT("heads_kv", r.problem.heads_kv),
      FA_INT("seqlen_q", r.problem.seqlen_q),
      FA_INT("seqlen_k", r.problem.seqlen_k),
      FA_INT("head_dim", r.problem.head_dim),
      Column{"causal", [](const Result& r) { return std::string(r.problem.causal ? "true" : "false"); },
             [](Result& r, const std::string& s) { r.problem.causal = s2b(s, "causal"); }},
      Column{"dtype", [](const Result& r) { return std::string(to_string(r.problem.dtype)); },
             [](Result& r, const std::string& s) {
               auto d = parse_dtype(s);
               if (!d) throw UsageError(fmt::format("column 'dtype': unknown '{}'", s));
               r.problem.dtype = *d;
             }},
      Column{"softmax_scale", [](const Result& r) { return d2s(r.problem.scale_f64()); },
             // head_dim precedes it in the columns, so the default scale is recognised.
             [](Result& r, const std::string& s) { r.problem.set_recorded_scale(s2d(s, "softmax_scale")); }},
      FA_OR_EMPTY("block_m", rv::tile_field(r.tile.block_m), r.tile.block_m, s2i),
      FA_OR_EMPTY("block_n", rv::tile_field(r.tile.block_n), r.tile.block_n, s2i),
      FA_OR_EMPTY("warps", rv::tile_field(r.tile.warps), r.tile.warps, s2i),
      FA_OR_EMPTY("stages", rv::tile_field(r.tile.stages), r.tile.stages, s2i),
      Column{"status", [](const Result& r) { return std::string(to_string(r.status)); },
             [](Result& r, const std::string& s) {
               auto st = parse_status(s);
               if (!st) throw UsageError(fmt::format("column 'status': unknown '{}'", s));
               r.status = *st;
             }},
      Column{"reason", [](const Result& r) { return r.reason; },
             [](Result& r, const std::string& s) { r.reason = s; }},
      FA_OPT_DBL("median_ms", timing, median_ms, timing),
      FA_OPT_DBL("min_ms", timing, min_ms, timing),
      FA_OPT_DBL("p10_ms", timing, p10_ms, timing),
      FA_OPT_DBL("p90_ms", timing, p90_ms, timing),
      FA_OPT_DBL("mean_ms", timing, mean_ms, timing),
      FA_OPT_DBL("stddev_ms", timing, stddev_ms, timing),
      FA_OPT_INT("samples", timing, samples, timing),
      FA_OPT_DBL("noise", timing, noise, timing),
      Column{"timing_method", [](const Result& r) { return r.timing ? r.timing->method : std::string(); },
             [](Result& r, const std::string& s) { timing(r).method = s; }},
      FA_OR_EMPTY("tflops", rv::tflops(r), r.tflops, s2d),
      FA_OR_EMPTY("matmul_fraction", rv::matmul_fraction(r), r.matmul_fraction, s2d),
      FA_OR_EMPTY("traffic_model_read_bytes", modelled(r, &Traffic::read_bytes), r.traffic_model.read_bytes, s2i),
      FA_OR_EMPTY("traffic_model_write_bytes", modelled(r, &Traffic::write_bytes), r.traffic_model.write_bytes, s2i),
      FA_OR_EMPTY("model_bandwidth_gbps", rv::model_bandwidth_gbps(r), r.model_bandwidth_gbps, s2d),
      FA_OPT_INT("traffic_measured_read_bytes", traffic_measured, read_bytes, measured),
      FA_OPT_INT("traffic_measured_write_bytes", traffic_measured, write_bytes, measured),
      Column{"traffic_measured_source", [](const Result& r) { return r.traffic_measured_source; },
             [](Result& r, const std::string& s) { r.traffic_measured_source = s; }},
      Column{"l2_hit_rate_pct", [](const Result& r) { return cell(r.l2_hit_rate_pct); },
             [](Result& r, const std::string& s) { r.l2_hit_rate_pct = s2d(s, "l2_hit_rate_pct"); }},
      FA_OR_EMPTY("peak_extra_bytes", rv::peak_extra_bytes(r), r.peak_extra_bytes, s2i),
      FA_OPT_DBL("o_max_abs", errors, o_max_abs, errs),
      FA_OPT_DBL("o_max_rel", errors, o_max_rel, errs),
      FA_OPT_DBL("o_rel_l2", errors, o_rel_l2, errs),
      FA_OPT_DBL("lse_max_abs", errors, lse_max_abs, errs),
      FA_OPT_DBL("lse_max_rel", errors, lse_max_rel, errs),
      FA_OPT_INT("nonfinite", errors, nonfinite, errs),
      FA_OPT_INT("rows_checked", errors, rows_checked, errs),
      FA_OPT_INT("cols_checked", grad_errors, cols_checked, grads),
      Column{"sampled", [](const Result& r) { return r.errors ? std::string(r.errors->sampled ? "true" : "false") : std::string(); },
             [](Result& r, const std::string& s) { errs(r).sampled = s2b(s, "sampled"); }},
      FA_OPT_DBL("tolerance", tolerances, tolerance, tols),
      FA_OPT_DBL("lse_tolerance", tolerances, lse_tolerance, tols),
      FA_OPT_DBL("errors_vs_unquantized_o_max_abs", errors_vs_unquantized, o_max_abs, unquantized),
      FA_OPT_DBL("errors_vs_unquantized_o_rel_l2", errors_vs_unquantized, o_rel_l2, unquantized),
      FA_OPT_DBL("errors_vs_unquantized_lse_max_abs", errors_vs_unquantized, lse_max_abs, unquantized),
      FA_GRAD_COLUMNS(dq),
      FA_GRAD_COLUMNS(dk),
      FA_GRAD_COLUMNS(dv),
      FA_OR_EMPTY("clock_before_mhz", rv::clock_mhz(r.clock_before_mhz), r.clock_before_mhz, s2i),
      FA_OR_EMPTY("clock_after_mhz", rv::clock_mhz(r.clock_after_mhz), r.clock_after_mhz, s2i),
      Column{"seed", [](const Result& r) { return std::to_string(r.seed); },
             [](Result& r, const std::string& s) {
               uint64_t v = 0;
               auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
               if (ec != std::errc() || p != s.data() + s.size())
                 throw UsageError(fmt::format("column 'seed': '{}' is not an unsigned integer", s));
               r.seed = v;
             }},
  };
  return cols;
}

DeviceIdentity& dev(Result& r) {
  if (!r.device) r.device.emplace();
  return *r.device;
}

// `device` flattened: written only when a row of the document has one (a run
// with --devices), so files of other runs keep their columns.
const std::vector<Column>& device_columns() {
  static const std::vector<Column> cols = {
      Column{"device_index", [](const Result& r) { return r.device ? std::to_string(r.device->index) : std::string(); },
             [](Result& r, const std::string& s) {
               const int64_t v = s2i(s, "device_index");
               if (v < 0 || v > INT_MAX)
                 throw UsageError(fmt::format("column 'device_index': '{}' is not a device number", s));
               dev(r).index = int(v);
             }},
      Column{"device_name", [](const Result& r) { return r.device ? r.device->name : std::string(); },
             [](Result& r, const std::string& s) { dev(r).name = s; }},
      Column{"device_uuid", [](const Result& r) { return r.device ? r.device->uuid : std::string(); },
             [](Result& r, const std::string& s) { dev(r).uuid = s; }},
  };
  return cols;
}

Fp8Settings& fp8(Result& r) {
  if (!r.fp8) r.fp8.emplace();
  return *r.fp8;
}

// The FP8 settings flattened: written only when a row of the document has them
// (e4m3), so files of other runs keep their columns; empty on other rows.
const std::vector<Column>& fp8_columns() {
  static const std::vector<Column> cols = {
      Column{"fp8_scaling",
             [](const Result& r) { return r.fp8 ? std::string(to_string(r.fp8->fp8_scaling)) : std::string(); },
             [](Result& r, const std::string& s) {
               const auto m = parse_fp8_scaling(s);
               if (!m) throw UsageError(fmt::format("column 'fp8_scaling': unknown '{}'; expected tensor, head or block", s));
               fp8(r).fp8_scaling = *m;
             }},
      Column{"fp8_hadamard",
             [](const Result& r) { return r.fp8 ? std::string(r.fp8->fp8_hadamard ? "true" : "false") : std::string(); },
             [](Result& r, const std::string& s) { fp8(r).fp8_hadamard = s2b(s, "fp8_hadamard"); }},
  };
  return cols;
}

// The document's columns: every row field, the FP8 settings after the
// problem's where a row has them, and `device` where a row has one.
std::vector<const Column*> document_columns(CsvLayout layout) {
  std::vector<const Column*> out;
  for (const auto& c : columns()) {
    out.push_back(&c);
    if (c.name == "softmax_scale" && layout.fp8)
      for (const auto& f : fp8_columns()) out.push_back(&f);
  }
  if (layout.device)
    for (const auto& c : device_columns()) out.push_back(&c);
  return out;
}

#undef FA_INT
#undef FA_OPT_DBL
#undef FA_OPT_INT
#undef FA_GRAD_COLUMNS
#undef FA_OR_EMPTY

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// RFC 4180 fields of one record starting at `pos`; advances pos past the record.
std::vector<std::string> parse_record(const std::string& text, size_t& pos) {
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  while (pos < text.size()) {
    char c = text[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < text.size() && text[pos] == '"') {
          cur += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(cur));
      cur.clear();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      cur += c;
    }
  }
  fields.push_back(std::move(cur));
  return fields;
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& c : columns()) n.push_back(c.name);
    return n;
  }();
  return names;
}

CsvLayout csv_layout(const std::vector<Result>& rows) {
  CsvLayout layout;
  for (const auto& r : rows) layout.include(r);
  return layout;
}

std::string csv_header(CsvLayout layout) {
  std::string s;
  for (const Column* c : document_columns(layout)) s += (s.empty() ? "" : ",") + c->name;
  return s + "\n";
}

std::string csv_row(const Result& r, CsvLayout layout) {
  std::string s;
  bool first = true;
  for (const Column* c : document_columns(layout)) {
    if (!first) s += ',';
    s += quote(c->get(r));
    first = false;
  }
  return s + "\n";
}

std::string csv_document(const std::vector<Result>& rows) {
  const CsvLayout layout = csv_layout(rows);
  std::string s = csv_header(layout);
  for (const auto& r : rows) s += csv_row(r, layout);
  return s;
}

std::vector<Result> read_results_csv(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("CSV file '{}' cannot be opened", path));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  size_t pos = 0;
  std::vector<std::string> header = parse_record(text, pos);
  const std::vector<const Column*> cols = document_columns(CsvLayout{true, true});
  std::vector<const Column*> by_index;
  for (const auto& h : header) {
    const Column* found = nullptr;
    for (const Column* c : cols)
      if (c->name == h) found = c;
    if (!found) throw UsageError(fmt::format("{}: unknown column '{}'", path, h));
    by_index.push_back(found);
  }
  std::vector<Result> rows;
  int line = 1;
  while (pos < text.size()) {
    ++line;
    std::vector<std::string> fields = parse_record(text, pos);
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (fields.size() != header.size())
      throw UsageError(fmt::format("{}:{}: {} fields, header has {}", path, line, fields.size(),
                                   header.size()));
    Result r;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].empty()) continue;
      try {
        by_index[i]->set(r, fields[i]);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("{}:{}: {}", path, line, e.what()));
      }
    }
    if (r.fp8 && r.problem.dtype != DType::e4m3)
      throw UsageError(fmt::format("{}:{}: a {} row has FP8 settings; expected fp8_scaling and fp8_hadamard on "
                                   "e4m3 rows only",
                                   path, line, to_string(r.problem.dtype)));
    share_checked_rows(r);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace fa
