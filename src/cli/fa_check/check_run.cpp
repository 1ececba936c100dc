#include "cli/fa_check/check_run.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/stop.h"
#include "registry/cpu_kernels.h"
#include "registry/cuda_kernels.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "sweep/runner.h"

namespace fa::check {

namespace {

// "a, b, c", for a message.
std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

template <typename Fault>
KernelVariant planted_variant(const std::string& entry, const std::string& fault_name, const KernelVariant& v,
                              const std::vector<Fault>& faults) {
  std::vector<std::string> names;
  for (Fault f : faults) {
    if (to_string(f) == fault_name) return make_faulty_cpu_variant(f, v.tile);
    names.emplace_back(to_string(f));
  }
  throw UsageError(fmt::format("--kernels '{}': unknown fault '{}' ({})", entry, fault_name, joined(names)));
}

// "cpu.fa2.64x64+no_rescale", "fa3.bwd.bf16.hd128.64x128.w12.s2+no_d_term": the
// variant with that fault planted, or a UsageError saying what exists.
KernelVariant faulty_variant(const std::string& entry, const Registry& reg) {
  const auto plus = entry.find('+');
  const std::string base = entry.substr(0, plus), fault_name = entry.substr(plus + 1);
  const KernelVariant* v = reg.find(base);
  if (v && v->backend == Backend::cpu && v->family == Family::fa2)
    return v->pass == Pass::fwd ? planted_variant(entry, fault_name, *v, planted_cpu_faults())
                                : planted_variant(entry, fault_name, *v, planted_cpu_bwd_faults());
  const std::vector<PlantedGpuVariants> gpu = planted_gpu_variants();
  for (const PlantedGpuVariants& g : gpu) {
    if (g.base != base) continue;
    if (auto made = make_planted_gpu_variant(base, fault_name)) return std::move(*made);
    throw UsageError(
        fmt::format("--kernels '{}': unknown fault '{}' ({})", entry, fault_name, joined(g.faults)));
  }
  if (gpu.empty() && base.rfind("fa3.", 0) == 0)
    throw UsageError(fmt::format("--kernels '{}': this build has no GPU kernel with planted faults; they are "
                                 "planted in {}", entry, kPlantedGpuWhere));
  std::string gpu_where;
  for (const PlantedGpuVariants& g : gpu)
    gpu_where += fmt::format("{}{} (e.g. {}+{})", gpu_where.empty() ? "" : ", ", g.base, g.base, g.faults.front());
  throw UsageError(fmt::format("--kernels '{}': faults are planted only in cpu.fa2 variants, forward or "
                               "backward (e.g. cpu.fa2.64x64+no_rescale, cpu.fa2.bwd.64x64+no_d_term), and in {}",
                               entry, gpu.empty() ? std::string(kPlantedGpuWhere) : gpu_where));
}

// A --kernels selection split into the entries the registry resolves (joined
// again by commas; empty entries dropped) and the faulty ones ("<base>+<fault>").
struct SplitSelection {
  std::string plain;
  std::vector<std::string> faulty;
};

SplitSelection split_selection(const std::string& selection) {
  SplitSelection out;
  size_t start = 0;
  while (start <= selection.size()) {
    const size_t comma = std::min(selection.find(',', start), selection.size());
    const std::string entry = selection.substr(start, comma - start);
    if (entry.find('+') != std::string::npos)
      out.faulty.push_back(entry);
    else if (!entry.empty())
      out.plain += (out.plain.empty() ? "" : ",") + entry;
    start = comma + 1;
  }
  return out;
}

std::string quote(const std::string& s) {
  if (s.find_first_of(" '\"*?$\\") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

void check_faulty_entries(const std::string& selection, const Registry& reg) {
  for (const std::string& entry : split_selection(selection).faulty) faulty_variant(entry, reg);
}

KernelSet resolve_kernels(const std::string& selection, Backend backend, const Registry& reg) {
  KernelSet set;
  SplitSelection split = split_selection(selection);
  if (selection.empty()) split.plain = std::string(to_string(backend));
  if (!split.plain.empty())
    for (const KernelVariant* v : reg.select(split.plain))
      if (v->backend == backend) set.kernels.push_back(v);
  for (const std::string& entry : split.faulty) {
    KernelVariant v = faulty_variant(entry, reg);
    if (v.backend != backend)
      throw UsageError(fmt::format("--kernels '{}': this faulty variant runs on the {} back end (--backend {})",
                                   entry, to_string(v.backend), to_string(v.backend)));
    set.kernels.push_back(&set.owned.emplace_back(std::move(v)));
  }
  if (set.kernels.empty())
    throw UsageError(fmt::format("--kernels '{}': no kernel of this selection runs on the {} back end",
                                 selection, to_string(backend)));
  return set;
}

size_t run_case(const AttnProblem& p, const std::vector<Pass>& passes, Distribution dist, const Fp8Settings& fp8,
                const std::vector<const KernelVariant*>& kernels, const CheckSettings& s, Executor& ex,
                const std::function<void(const CheckRow&)>& on_row) {
  SweepConfig cfg;
  cfg.distribution = dist;
  cfg.fp8_scaling = fp8.fp8_scaling;
  cfg.fp8_hadamard = fp8.fp8_hadamard;
  cfg.max_check_rows = s.max_check_rows;
  if (s.max_check_rows_set) cfg.origin["max_check_rows"] = "--max-check-rows";
  cfg.exact_check = s.exact_check;
  cfg.threads = s.threads;
  cfg.validate_only = true;
  SweepPlan plan;
  // (pass, block_m, block_n) -> index in plan.points. The rows and columns
  // compared on a sampled case depend on the blocks in play, and a point with a
  // backward computes its forward reference in the gradients' pass (the same
  // values up to float64 rounding): grouping keeps a replay's numbers identical.
  std::map<std::tuple<Pass, int, int>, size_t> point_of_group;
  size_t unsupported = 0;
  for (const KernelVariant* v : kernels) {
    if (std::find(passes.begin(), passes.end(), v->pass) == passes.end()) continue;
    PlannedKernel k = plan_row(*v, v->pass, Registry::instance());
    if (!v->supports(p).ok || (k.partner && !k.partner->supports(p).ok)) {
      ++unsupported;
      continue;
    }
    const int64_t limit = check_limit(cfg, ex.backend(), host_reference(p));
    const bool sampled = p.seqlen_q > limit || p.seqlen_k > limit;
    const auto group = sampled ? std::tuple(v->pass, v->tile.block_m, v->pass == Pass::bwd ? v->tile.block_n : 0)
                               : std::tuple(v->pass, 0, 0);
    auto [it, fresh] = point_of_group.try_emplace(group, plan.points.size());
    if (fresh) plan.points.push_back(PlannedPoint{p, {}, cfg.fp8_settings(p.dtype)});
    plan.points[it->second].kernels.push_back(std::move(k));
  }
  if (plan.points.empty()) return unsupported;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) {
    CheckRow row{r};
    row.result.distribution = dist;
    on_row(row);
  };
  SweepOutcome out = run_sweep(plan, cfg, s.seed, ex, 0, {}, hooks);
  if (out.end == SweepEnd::sticky_error)
    throw KernelError(fmt::format("sticky device error, check stopped: {} (seed {})", out.why, s.seed), true);
  if (out.end == SweepEnd::interrupted || out.end == SweepEnd::timeout)
    throw Stopped(out.end == SweepEnd::timeout ? StopReason::timeout : StopReason::interrupted);
  return unsupported;
}

std::string replay_command(const std::string& program, const CheckRow& row, const CheckSettings& s,
                           int64_t default_max_check_rows) {
  std::string cmd = fmt::format("{} --backend {} --kernels {} --case {} --distribution {} --seed {}",
                                quote(program), to_string(row.result.backend), quote(row.result.kernel),
                                quote(row.result.problem.describe()), to_string(row.distribution()), s.seed);
  if (s.max_check_rows_set || s.max_check_rows != default_max_check_rows)
    cmd += fmt::format(" --max-check-rows {}", s.max_check_rows);
  if (s.exact_check) cmd += " --exact-check";
  if (const auto& f = row.result.fp8) {
    if (f->fp8_scaling != Fp8Settings{}.fp8_scaling) cmd += fmt::format(" --fp8-scaling {}", to_string(f->fp8_scaling));
    if (f->fp8_hadamard) cmd += " --fp8-hadamard";
  }
  // The same device: a fault may be one GPU's alone.
  if (row.result.device) cmd += fmt::format(" --devices {}", row.result.device->index);
  return cmd;
}

}  // namespace fa::check
