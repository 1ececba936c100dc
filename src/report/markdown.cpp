#include "report/markdown.h"

#include <fmt/format.h>

namespace fa {

namespace {
// A '|' inside a reason would split the cell.
std::string cell(std::string s) {
  for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}
}  // namespace

std::string markdown_header() {
  return "| kernel | shape | status | median ms | TFLOP/s | model GB | model GB/s | O max abs err "
         "| tolerance | reason |\n"
         "|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
}

std::string markdown_row(const Result& r) {
  const bool timed = r.timing.has_value();
  std::string median = timed ? fmt::format("{:.4f}", r.timing->median_ms) : "-";
  std::string tflops = timed ? fmt::format("{:.3f}", r.tflops) : "-";
  // 0 modelled bytes means no model (a row for a kernel that does not exist).
  std::string gb = r.traffic_model.total() > 0 ? fmt::format("{:.4g}", double(r.traffic_model.total()) / 1e9) : "-";
  std::string gbps = timed ? fmt::format("{:.1f}", r.model_bandwidth_gbps) : "-";
  // A sampled check says so: its maximum is over the rows compared, not all of them.
  std::string err = !r.errors ? "-"
                    : r.errors->sampled
                        ? fmt::format("{:.3g} (sampled: {} of {} rows)", r.errors->o_max_abs, r.errors->rows_checked,
                                      r.problem.seqlen_q)
                        : fmt::format("{:.3g}", r.errors->o_max_abs);
  std::string tol = r.errors ? fmt::format("{:.3g}", r.errors->tolerance) : "-";
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(r.kernel),
                     r.problem.describe(), to_string(r.status), median, tflops, gb, gbps, err, tol,
                     cell(r.reason));
}

std::string markdown_table(const std::vector<Result>& rows) {
  std::string s = markdown_header();
  for (const auto& r : rows) s += markdown_row(r);
  return s;
}

}  // namespace fa
