#include "cli/fa_check/check_report.h"

#include <fmt/format.h>

#include "report/json_limits.h"
#include "report/output_path.h"
#include "report/csv.h"
#include "report/result_json.h"

namespace fa::check {

std::string table_header() {
  return "| case | distribution | kernel | status | O max abs | O max rel | O rel L2 | LSE max abs | "
         "LSE max rel | LSE rel L2 | O / LSE tolerance | rows | dQ / dK / dV max abs (tolerance) | cols |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
}

std::string table_row(const CheckRow& row) {
  const Result& r = row.result;
  std::string cells = "- | - | - | - | - | - | - | -";
  if (r.errors) {
    const ErrorMetrics& m = *r.errors;
    const Tolerances t = r.tolerances.value_or(Tolerances{});
    cells = fmt::format("{:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} / {:.3g} | {}{}",
                        m.o_max_abs, m.o_max_rel, m.o_rel_l2, m.lse_max_abs, m.lse_max_rel, m.lse_rel_l2,
                        t.tolerance, t.lse_tolerance, m.rows_checked, m.sampled ? " sampled" : "");
    if (m.nonfinite > 0) cells += fmt::format(" ({} non-finite)", m.nonfinite);
  }
  std::string grads = "- | -";
  if (r.grad_errors) {
    const GradErrors& g = *r.grad_errors;
    auto one = [](const TensorErrors& t) {
      return fmt::format("{:.3g} ({:.3g}){}", t.max_abs, t.tolerance,
                         t.nonfinite > 0 ? fmt::format(" {} non-finite", t.nonfinite) : "");
    };
    grads = fmt::format("{} / {} / {} | {}", one(g.dq), one(g.dk), one(g.dv), g.cols_checked);
  }
  const bool bad = r.status == Status::fail || r.status == Status::error;
  return fmt::format("| {} | {} | {} | {}{}{} | {} | {} |\n", r.problem.describe(), to_string(row.distribution()),
                     r.kernel, bad ? "**" : "", to_string(r.status), bad ? "**" : "", cells, grads);
}

void write_check_json(const std::string& path, const nlohmann::json& metadata, const std::vector<CheckRow>& rows) {
  nlohmann::json doc;
  doc["schema_version"] = kResultsSchemaVersion;
  doc["metadata"] = metadata;
  doc["results"] = nlohmann::json::array();
  for (const auto& row : rows) {
    nlohmann::json j = result_to_json(row.result);
    if (row.result.errors && j.contains("errors") && j["errors"].is_object())
      j["errors"]["lse_rel_l2"] = row.result.errors->lse_rel_l2;
    doc["results"].push_back(std::move(j));
  }
  write_output(path, dump_json(doc) + "\n");
}

void write_check_csv(const std::string& path, const std::vector<CheckRow>& rows) {
  CsvLayout layout;
  for (const auto& row : rows) layout.include(row.result);
  std::string header = csv_header(layout);
  header.pop_back();  // the newline
  std::string doc = header + ",distribution,lse_rel_l2\n";
  for (const auto& row : rows) {
    std::string line = csv_row(row.result, layout);
    line.pop_back();
    doc += fmt::format("{},{},{}\n", line, to_string(row.distribution()),
                       row.result.errors ? fmt::format("{:.6g}", row.result.errors->lse_rel_l2) : "");
  }
  write_output(path, doc);
}

}  // namespace fa::check
