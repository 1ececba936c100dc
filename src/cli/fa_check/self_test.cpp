#include "cli/fa_check/self_test.h"

#include <fmt/format.h>

#include "registry/cpu_kernels.h"

namespace fa::check {

namespace {

constexpr const char* kClean = "cpu.fa2.64x64";

bool caught(const Result& r) { return r.status == Status::fail || r.status == Status::error; }

std::string evidence(const CheckRow& row) {
  const Result& r = row.result;
  if (!r.errors) return r.reason;
  const ErrorMetrics& m = *r.errors;
  const Tolerances t = r.tolerances.value_or(Tolerances{});
  return fmt::format("O max abs {:.3g} vs {:.3g}, LSE max abs {:.3g} vs {:.3g}, {} non-finite", m.o_max_abs,
                     t.tolerance, m.lse_max_abs, t.lse_tolerance, m.nonfinite);
}

}  // namespace

std::string self_test_selection() {
  std::string s = kClean;
  for (CpuFault f : planted_cpu_faults()) s += fmt::format(",{}+{}", kClean, to_string(f));
  return s;
}

bool report_self_test(const std::vector<CheckRow>& rows) {
  bool ok = true;
  fmt::print("\nSelf-test: each planted fault must fail at least one case; the clean {} none.\n", kClean);
  size_t clean_rows = 0, clean_failures = 0;
  for (const auto& row : rows)
    if (row.result.kernel == kClean) {
      ++clean_rows;
      if (caught(row.result)) {
        ++clean_failures;
        fmt::print("  clean kernel FAILED '{}' ({}): {}\n", row.result.problem.describe(),
                   to_string(row.distribution), evidence(row));
      }
    }
  if (clean_rows == 0 || clean_failures > 0) ok = false;
  fmt::print("  {:<22} {} of {} cases failed{}\n", "clean (none)", clean_failures, clean_rows,
             clean_failures == 0 && clean_rows > 0 ? " (as it must)" : "  <-- the check itself is broken");
  for (CpuFault f : planted_cpu_faults()) {
    const std::string name = fmt::format("{}+{}", kClean, to_string(f));
    const CheckRow* first = nullptr;
    size_t total = 0, hits = 0;
    for (const auto& row : rows) {
      if (row.result.kernel != name) continue;
      ++total;
      if (caught(row.result)) {
        ++hits;
        if (!first) first = &row;
      }
    }
    if (first) {
      fmt::print("  {:<22} caught by {} of {} cases, first '{}' ({}): {}\n", to_string(f), hits, total,
                 first->result.problem.describe(), to_string(first->distribution), evidence(*first));
    } else {
      ok = false;
      fmt::print("  {:<22} NOT CAUGHT by any of {} cases\n", to_string(f), total);
    }
  }
  fmt::print("Self-test {}\n", ok ? "passed: every planted fault was caught" : "FAILED");
  return ok;
}

}  // namespace fa::check
