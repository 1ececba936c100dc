#include "cli/fa_check/self_test.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "registry/cpu_kernels.h"
#include "registry/cuda_kernels.h"

namespace fa::check {

namespace {

// A clean kernel and the faults planted in copies of it.
struct Planted {
  std::string clean;
  std::vector<std::string> faults;
};

template <typename Fault>
std::vector<std::string> names_of(const std::vector<Fault>& faults) {
  std::vector<std::string> names;
  for (Fault f : faults) names.emplace_back(to_string(f));
  return names;
}

std::vector<Planted> planted_kernels(Backend backend) {
  if (backend == Backend::cpu)
    return {{"cpu.fa2.64x64", names_of(planted_cpu_faults())},
            {"cpu.fa2.bwd.64x64", names_of(planted_cpu_bwd_faults())}};
  std::vector<Planted> out;
  for (const PlantedGpuVariants& g : planted_gpu_variants()) out.push_back({g.base, g.faults});
  if (out.empty())
    throw UsageError(fmt::format("--self-test --backend cuda: this build has no GPU kernel with planted faults; "
                                 "they are planted in {}", kPlantedGpuWhere));
  return out;
}

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

// The clean kernel must pass every case it ran, and run at least one.
bool report_clean(const std::vector<CheckRow>& rows, const std::string& clean) {
  size_t clean_rows = 0, clean_failures = 0;
  for (const auto& row : rows)
    if (row.result.kernel == clean) {
      ++clean_rows;
      if (caught(row.result)) {
        ++clean_failures;
        fmt::print("  clean {} FAILED '{}' ({}): {}\n", clean, row.result.problem.describe(),
                   to_string(row.distribution()), evidence(row));
      }
    }
  const bool ok = clean_rows > 0 && clean_failures == 0;
  if (clean_rows == 0)
    fmt::print("  {:<28} ran on no case: the suite holds none it supports  <-- nothing was tested\n",
               clean + " (clean)");
  else
    fmt::print("  {:<28} {} of {} cases failed{}\n", clean + " (clean)", clean_failures, clean_rows,
               ok ? " (as it must)" : "  <-- the check itself is broken");
  return ok;
}

// Each fault planted in `clean` must fail at least one case.
bool report_faults(const std::vector<CheckRow>& rows, const Planted& planted) {
  bool ok = true;
  for (const std::string& fault : planted.faults) {
    const std::string name = fmt::format("{}+{}", planted.clean, fault);
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
      fmt::print("  {:<28} caught by {} of {} cases, first '{}' ({}): {}\n", fault, hits, total,
                 first->result.problem.describe(), to_string(first->distribution()), evidence(*first));
    } else {
      ok = false;
      fmt::print("  {:<28} NOT CAUGHT by any of {} cases\n", fault, total);
    }
  }
  return ok;
}

}  // namespace

std::string self_test_selection(Backend backend) {
  std::string s;
  for (const Planted& p : planted_kernels(backend)) {
    s += (s.empty() ? "" : ",") + p.clean;
    for (const std::string& fault : p.faults) s += fmt::format(",{}+{}", p.clean, fault);
  }
  return s;
}

bool report_self_test(const std::vector<CheckRow>& rows, Backend backend) {
  const std::vector<Planted> planted = planted_kernels(backend);
  std::string cleans;
  for (size_t i = 0; i < planted.size(); ++i)
    cleans += (i == 0 ? "" : i + 1 == planted.size() ? " and " : ", ") + planted[i].clean;
  fmt::print("\nSelf-test: each planted fault must fail at least one case; the clean {} none.\n", cleans);
  bool ok = true;
  for (const Planted& p : planted) {
    ok &= report_clean(rows, p.clean);
    ok &= report_faults(rows, p);
  }
  fmt::print("Self-test {}\n", ok ? "passed: every planted fault was caught" : "FAILED");
  return ok;
}

}  // namespace fa::check
