#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/markdown.h"

namespace fa {

using nlohmann::json;

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #111; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.8em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.status-fail td, tr.status-error td { background: #fdd; }
tr.status-oom td, tr.status-unsupported td { color: #666; }
.v-slower, .v-regression { background: #f8c4c4; font-weight: bold; }
.v-faster { background: #c9efc9; }
.v-ambiguous { background: #fbe7b0; }
.v-missing, .v-new, .v-untimed { background: #e4e4e4; }
.verdict-fail { color: #a00; font-weight: bold; } .verdict-ok { color: #060; font-weight: bold; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
pre { font-size: 0.85em; white-space: pre-wrap; }
.note { color: #a33; }
)";

std::string scalar_text(const json& v) {
  if (v.is_null()) return "null (not measured or not applicable)";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string metadata_section(const json& meta) {
  std::string s = "<h2 id=\"metadata\">Run metadata</h2>\n<table id=\"metadata-table\">\n";
  if (!meta.is_object()) return s + "<tr><td>the file has no metadata object</td></tr></table>\n";
  for (const auto& [key, v] : meta.items()) {
    s += "<tr><th>" + html_escape(key) + "</th><td>";
    if (key == "device" && v.is_object()) {
      s += html_escape(v.contains("name") ? scalar_text(v["name"]) : "?");
      if (v.contains("details")) s += "<br>" + html_escape(scalar_text(v["details"]));
    } else if (v.is_object() || v.is_array()) {
      s += "<details><summary>" + std::to_string(v.size()) + " entries</summary><pre>" + html_escape(v.dump(2)) +
           "</pre></details>";
    } else {
      s += html_escape(scalar_text(v));
    }
    s += "</td></tr>\n";
  }
  return s + "</table>\n";
}

std::string validation_section(const std::vector<Result>& rows) {
  std::map<std::string, int> by_status;
  int checked = 0, sampled = 0, throttled = 0, grads = 0;
  double worst = -1;
  const Result* worst_row = nullptr;
  for (const auto& r : rows) {
    ++by_status[std::string(to_string(r.status))];
    if (r.throttled()) ++throttled;
    if (r.grad_errors) ++grads;
    if (!r.errors) continue;
    ++checked;
    sampled += r.errors->sampled;
    if (r.tolerances && r.tolerances->tolerance > 0) {
      const double q = r.errors->o_max_abs / r.tolerances->tolerance;
      if (!(q <= worst)) worst = q, worst_row = &r;  // a NaN error is the worst
    }
  }
  std::string s = "<h2 id=\"validation\">Validation</h2>\n<ul id=\"validation-summary\">\n";
  s += fmt::format("<li>{} rows:", rows.size());
  for (const auto& [st, n] : by_status) s += fmt::format(" {} {};", n, html_escape(st));
  s += "</li>\n";
  s += fmt::format("<li>{} rows checked against the float64 reference before timing ({} on a sample of rows); "
                   "{} with their dQ, dK, dV checked</li>\n",
                   checked, sampled, grads);
  if (worst_row)
    s += fmt::format("<li>largest O max abs error relative to its tolerance: {:.3g} ({} at {})</li>\n", worst,
                     html_escape(worst_row->kernel), html_escape(worst_row->problem.describe()));
  s += fmt::format("<li>{} rows timed while the SM clock fell or stood low (reason <code>throttled</code>)</li>\n",
                   throttled);
  return s + "</ul>\n";
}

std::string compare_section(const HtmlReportInput& in) {
  if (in.baseline_path.empty()) return "";
  std::string s = "<h2 id=\"compare\">Against the baseline</h2>\n";
  s += "<p>Baseline <code>" + html_escape(in.baseline_path) + "</code>: <span class=\"" +
       (in.compare_failed ? "verdict-fail\">regression" : "verdict-ok\">no regression") + "</span> (docs/COMPARE.md). " +
       html_escape(in.compare_summary) + "</p>\n";
  std::string missing;
  for (const auto& [key, v] : in.verdicts)
    if (v.verdict == "missing")
      missing += "<tr class=\"v-missing\"><td>" + html_escape(key) + "</td><td>" + html_escape(v.detail) + "</td></tr>\n";
  if (!missing.empty())
    s += "<p>Baseline rows missing from the run:</p>\n<table id=\"missing-rows\"><tr><th>key</th><th>why</th></tr>\n" +
         missing + "</table>\n";
  return s + "<p>Each row's verdict is in the results table below (highlighted).</p>\n";
}

std::string figures_section(const HtmlReportInput& in) {
  std::string s = "<h2 id=\"figures\">Figures</h2>\n";
  if (!in.figures_note.empty()) s += "<p class=\"note\" id=\"figures-note\">" + html_escape(in.figures_note) + "</p>\n";
  for (const auto& f : in.figures) {
    const auto at = f.svg.find("<svg");
    if (at == std::string::npos) continue;
    s += "<figure id=\"fig-" + html_escape(f.name) + "\">\n" + f.svg.substr(at) + "\n<figcaption>" +
         html_escape(f.name) + "</figcaption></figure>\n";
  }
  return s;
}

std::string results_section(const HtmlReportInput& in) {
  const bool cmp = !in.baseline_path.empty();
  const auto cols = markdown_columns();
  std::string s = fmt::format("<h2 id=\"results\">Results ({} rows)</h2>\n<table id=\"results-table\">\n<tr>", in.rows.size());
  for (const auto& c : cols) s += "<th>" + html_escape(c) + "</th>";
  if (cmp) s += "<th>verdict</th><th>vs baseline</th>";
  s += "</tr>\n";
  for (const auto& r : in.rows) {
    s += fmt::format("<tr class=\"status-{}\">", to_string(r.status));
    const auto cells = markdown_cells(r);
    for (size_t i = 0; i < cells.size(); ++i)
      s += std::string(i >= 4 && i <= 10 ? "<td class=\"num\">" : "<td>") + html_escape(cells[i]) + "</td>";
    if (cmp) {
      const auto it = in.verdicts.find(r.key());
      const HtmlVerdict v = it != in.verdicts.end() ? it->second : HtmlVerdict{"new", "not in the baseline", false};
      const std::string cls = v.regression ? "v-regression" : "v-" + v.verdict;
      s += "<td class=\"" + html_escape(cls) + "\">" + html_escape(v.verdict) + (v.regression ? " (regression)" : "") +
           "</td><td class=\"" + html_escape(cls) + "\">" + html_escape(v.detail) + "</td>";
    }
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

}  // namespace

std::string html_report(const HtmlReportInput& in) {
  const json& m = in.metadata;
  const auto field = [&](const char* k) {
    return m.is_object() && m.contains(k) && m[k].is_string() ? m[k].get<std::string>() : std::string("?");
  };
  const std::string device =
      m.is_object() && m.contains("device") && m["device"].is_object() && m["device"].contains("name") &&
              m["device"]["name"].is_string()
          ? m["device"]["name"].get<std::string>()
          : std::string("?");
  const std::string title = fmt::format("fa-bench report: {} ({}, commit {})", in.run_path, device,
                                        field("git_commit").substr(0, 12));
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                  html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  s += "<h1>" + html_escape(title) + "</h1>\n";
  s += "<p>Sections: <a href=\"#metadata\">metadata</a>, <a href=\"#validation\">validation</a>, " +
       std::string(in.baseline_path.empty() ? "" : "<a href=\"#compare\">baseline</a>, ") +
       "<a href=\"#figures\">figures</a>, <a href=\"#results\">results</a>. Written by <code>fa-bench report</code>; "
       "every number is the run file's (docs/OUTPUTS.md).</p>\n";
  s += metadata_section(m);
  s += validation_section(in.rows);
  s += compare_section(in);
  s += figures_section(in);
  s += results_section(in);
  return s + "</body>\n</html>\n";
}

}  // namespace fa
