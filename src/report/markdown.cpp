#include "report/markdown.h"

#include <cmath>
#include <utility>

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

// The gradient tensor nearest its tolerance: "dK 0.0012 / 0.0041".
std::string worst_grad(const GradErrors& g) {
  const std::pair<const char*, const TensorErrors*> ts[] = {{"dQ", &g.dq}, {"dK", &g.dk}, {"dV", &g.dv}};
  const auto ratio = [](const TensorErrors& t) {
    return t.nonfinite > 0 ? INFINITY : t.tolerance > 0 ? t.max_abs / t.tolerance : t.max_abs;
  };
  const auto* worst = &ts[0];
  for (const auto& t : ts)
    if (ratio(*t.second) > ratio(*worst->second)) worst = &t;
  const TensorErrors& t = *worst->second;
  return fmt::format("{} {:.3g} / {:.3g}{}", worst->first, t.max_abs, t.tolerance,
                     t.nonfinite > 0 ? fmt::format(" ({} non-finite)", t.nonfinite) : "");
}
}  // namespace

std::vector<std::string> markdown_columns() {
  return {"kernel", "pass", "shape", "status", "median ms", "TFLOP/s", "model GB", "model GB/s", "O max abs err",
          "tolerance", "grad max abs err / tolerance", "reason"};
}

std::string markdown_header() {
  std::string s = "|";
  for (const auto& c : markdown_columns()) s += fmt::format(" {} |", c);
  return s + "\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
}

std::vector<std::string> markdown_cells(const Result& r) {
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
  std::string tol = r.tolerances ? fmt::format("{:.3g}", r.tolerances->tolerance) : "-";
  std::string grad = !r.grad_errors ? "-"
                     : r.grad_errors->sampled
                         ? fmt::format("{} (sampled: {} of {} rows, {} of {} columns)", worst_grad(*r.grad_errors),
                                       r.grad_errors->rows_checked, r.problem.seqlen_q, r.grad_errors->cols_checked,
                                       r.problem.seqlen_k)
                         : worst_grad(*r.grad_errors);
  return {r.kernel, std::string(to_string(r.pass)), r.problem.describe(), std::string(to_string(r.status)),
          median, tflops, gb, gbps, err, tol, grad, r.reason};
}

std::string markdown_row(const Result& r) {
  std::string s = "|";
  for (const auto& c : markdown_cells(r)) s += fmt::format(" {} |", cell(c));
  return s + "\n";
}

std::string markdown_table(const std::vector<Result>& rows) {
  std::string s = markdown_header();
  for (const auto& r : rows) s += markdown_row(r);
  return s;
}

}  // namespace fa
