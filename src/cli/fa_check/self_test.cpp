#include "cli/fa_check/self_test.h"

#include <fmt/format.h>

#include "registry/cpu_kernels.h"

namespace fa::check {

namespace {

constexpr const char* kClean = "cpu.fa2.64x64";
constexpr const char* kCleanBwd = "cpu.fa2.bwd.64x64";

bool caught(const Result& r) { return r.status == Status::fail || r.status == Status::error; }

std::string evidence(const CheckRow& row) {
  const Result& r = row.result;
  if (!r.errors) return r.reason;
  if (r.grad_errors) {
    const GradErrors& g = *r.grad_errors;
    return fmt::format("dQ max abs {:.3g} vs {:.3g}, dK {:.3g} vs {:.3g}, dV {:.3g} vs {:.3g}, {} non-finite",
                       g.dq.max_abs, g.dq.tolerance, g.dk.max_abs, g.dk.tolerance, g.dv.max_abs, g.dv.tolerance,
                       g.dq.nonfinite + g.dk.nonfinite + g.dv.nonfinite);
  }
  const ErrorMetrics& m = *r.errors;
  const Tolerances t = r.tolerances.value_or(Tolerances{});
  return fmt::format("O max abs {:.3g} vs {:.3g}, LSE max abs {:.3g} vs {:.3g}, {} non-finite", m.o_max_abs,
                     t.tolerance, m.lse_max_abs, t.lse_tolerance, m.nonfinite);
}

// The clean kernel must pass every case it ran.
bool report_clean(const std::vector<CheckRow>& rows, const std::string& clean) {
  size_t clean_rows = 0, clean_failures = 0;
  for (const auto& row : rows)
    if (row.result.kernel == clean) {
      ++clean_rows;
      if (caught(row.result)) {
        ++clean_failures;
        fmt::print("  clean {} FAILED '{}' ({}): {}\n", clean, row.result.problem.describe(),
                   to_string(row.distribution), evidence(row));
      }
    }
  const bool ok = clean_rows > 0 && clean_failures == 0;
  fmt::print("  {:<28} {} of {} cases failed{}\n", clean + " (clean)", clean_failures, clean_rows,
             ok ? " (as it must)" : "  <-- the check itself is broken");
  return ok;
}

// Each fault planted in `clean` must fail at least one case.
template <typename Fault>
bool report_faults(const std::vector<CheckRow>& rows, const std::string& clean, const std::vector<Fault>& faults) {
  bool ok = true;
  for (Fault f : faults) {
    const std::string name = fmt::format("{}+{}", clean, to_string(f));
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
      fmt::print("  {:<28} caught by {} of {} cases, first '{}' ({}): {}\n", to_string(f), hits, total,
                 first->result.problem.describe(), to_string(first->distribution), evidence(*first));
    } else {
      ok = false;
      fmt::print("  {:<28} NOT CAUGHT by any of {} cases\n", to_string(f), total);
    }
  }
  return ok;
}

template <typename Fault>
std::string with_faults(const std::string& clean, const std::vector<Fault>& faults) {
  std::string s = clean;
  for (Fault f : faults) s += fmt::format(",{}+{}", clean, to_string(f));
  return s;
}

}  // namespace

std::string self_test_selection() {
  return with_faults(kClean, planted_cpu_faults()) + "," + with_faults(kCleanBwd, planted_cpu_bwd_faults());
}

bool report_self_test(const std::vector<CheckRow>& rows) {
  fmt::print("\nSelf-test: each planted fault must fail at least one case; the clean {} and {} none.\n", kClean,
             kCleanBwd);
  bool ok = report_clean(rows, kClean);
  ok &= report_faults(rows, kClean, planted_cpu_faults());
  ok &= report_clean(rows, kCleanBwd);
  ok &= report_faults(rows, kCleanBwd, planted_cpu_bwd_faults());
  fmt::print("Self-test {}\n", ok ? "passed: every planted fault was caught" : "FAILED");
  return ok;
}

}  // namespace fa::check
