#include "sweep/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "core/result.h"
#include "registry/auto_tile.h"
#include "registry/cpu_kernels.h"

namespace fa {

namespace {

// The variants' pass a row of pass `p` runs.
Pass variant_pass(Pass p) { return p == Pass::fwd ? Pass::fwd : Pass::bwd; }

std::string_view pass_word(Pass p) { return p == Pass::fwd ? "forward" : "backward"; }

bool takes(const KernelVariant& v, const AttnProblem& p) {
  bool dt = v.dtypes.empty() || std::count(v.dtypes.begin(), v.dtypes.end(), p.dtype);
  bool hd = v.head_dims.empty() || std::count(v.head_dims.begin(), v.head_dims.end(), p.head_dim);
  return dt && hd;
}

bool tileless(const std::vector<const KernelVariant*>& group) {
  return std::all_of(group.begin(), group.end(),
                     [](const KernelVariant* v) { return v->tile.block_m == 0 && v->tile.block_n == 0; });
}

std::string tiles_of(const std::vector<const KernelVariant*>& vs) {
  std::set<std::string> t;
  for (const auto* v : vs) t.insert(v->tile.str());
  return t.empty() ? std::string("none") : fmt::format("{}", fmt::join(t, ", "));
}

std::string point_tag(Family f, Pass pass, const AttnProblem& p) {
  return fmt::format("{}{}.{}.hd{}", to_string(f), pass == Pass::bwd ? ".bwd" : "", to_string(p.dtype), p.head_dim);
}

// A CPU family that runs any block in this pass (made on demand).
bool cpu_tiled(Family f, Pass pass) {
  for (const CpuKernelEntry& e : cpu_kernel_entries())
    if (e.family == f && e.pass == pass && e.tiled) return true;
  return false;
}

void check_pass_implemented(Pass pass, const std::vector<const KernelVariant*>& sel,
                            const std::vector<const KernelVariant*>& of_pass, const std::string& selection) {
  if (!of_pass.empty()) return;
  std::string have = "none";
  if (!sel.empty()) have = fmt::format("{} variants such as {}", pass_word(sel.front()->pass), sel.front()->name);
  const std::string_view hint = pass == Pass::fwd
                                    ? "a backward variant runs with --pass bwd or fwd+bwd"
                                    : "backward variants are named <family>.bwd.*; `fa-bench list` shows each "
                                      "variant's pass";
  throw UsageError(fmt::format("pass {}: no selected kernel implements the {} pass (--kernels '{}' selects {}); {}",
                               to_string(pass), pass_word(variant_pass(pass)), selection, have, hint));
}

void check_axes_supported(const SweepConfig& c, Pass pass, const std::vector<const KernelVariant*>& sel) {
  const std::string_view what = pass == Pass::fwd ? "" : "backward ";
  for (int d : c.head_dim) {
    bool any = std::any_of(sel.begin(), sel.end(), [&](const KernelVariant* v) {
      return v->head_dims.empty() || std::count(v->head_dims.begin(), v->head_dims.end(), d);
    });
    if (!any) {
      std::set<int> dims;
      for (const auto* v : sel) dims.insert(v->head_dims.begin(), v->head_dims.end());
      throw UsageError(fmt::format("head_dim {}: no selected {}kernel supports it; the selected {}kernels "
                                   "support head_dim {}",
                                   d, what, what, fmt::join(dims, ", ")));
    }
  }
  for (DType t : c.dtype) {
    bool any = std::any_of(sel.begin(), sel.end(), [&](const KernelVariant* v) {
      return v->dtypes.empty() || std::count(v->dtypes.begin(), v->dtypes.end(), t);
    });
    if (!any)
      throw UsageError(fmt::format("dtype {}: no selected {}kernel supports it", to_string(t), what));
  }
}

// The selection's variants of one pass, grouped by family in registry order.
struct PassGroup {
  Pass pass = Pass::fwd;
  std::vector<Family> families;
  std::map<Family, std::vector<const KernelVariant*>> of_family;
};

class Planner {
 public:
  Planner(const SweepConfig& c, Backend backend, const Registry& reg, SweepPlan& plan)
      : c_(c), backend_(backend), reg_(reg), plan_(plan) {}

  // The rows of one pass at point p.
  void add_rows(const AttnProblem& p, const PassGroup& g, std::vector<PlannedKernel>& out) {
    for (Family f : g.families) {
      const Pass vp = variant_pass(g.pass);
      std::vector<const KernelVariant*> fit;
      for (const auto* v : g.of_family.at(f))
        if (takes(*v, p)) fit.push_back(v);
      if (fit.empty()) {
        std::set<std::string> have;
        for (const auto* v : g.of_family.at(f))
          for (DType t : v->dtypes)
            for (int d : v->head_dims) have.insert(fmt::format("{} hd{}", to_string(t), d));
        out.push_back(unsupported(point_tag(f, vp, p), f, {}, g.pass,
                                  fmt::format("no {} {} {} variant for {} head_dim {}; built: {}", to_string(backend_),
                                              to_string(f), pass_word(vp), to_string(p.dtype), p.head_dim,
                                              fmt::join(have, ", "))));
        continue;
      }
      if (c_.block_auto || tileless(fit)) {
        // auto: the tile a rule picks for this length (registry/auto_tile.h), else
        // the family's default tile; a selection without either (e.g. one
        // non-default variant named explicitly) runs what was selected.
        std::vector<const KernelVariant*> chosen;
        if (auto rule = auto_tile_rule(f, vp, p))
          for (const auto* v : fit)
            if (rule->names(v->tile)) chosen.push_back(v);
        if (chosen.empty())
          for (const auto* v : fit)
            if (v->default_tile) chosen.push_back(v);
        for (const auto* v : (c_.block_auto && !chosen.empty()) ? chosen : fit) out.push_back(row(*v, g.pass));
        continue;
      }
      for (const Tile& want : c_.block) {
        if (backend_ == Backend::cpu && cpu_tiled(f, vp)) {
          out.push_back(row(*cpu_variant(f, want, vp), g.pass));
          continue;
        }
        bool found = false;
        for (const auto* v : fit)
          if (v->tile.block_m == want.block_m && v->tile.block_n == want.block_n) {
            out.push_back(row(*v, g.pass));
            found = true;
          }
        if (!found)
          out.push_back(unsupported(fmt::format("{}.{}", point_tag(f, vp, p), want.str()), f, want, g.pass,
                                    fmt::format("block {} is not compiled for {}; compiled tiles: {}", want.str(),
                                                point_tag(f, vp, p), tiles_of(fit))));
      }
    }
  }

 private:
  PlannedKernel unsupported(std::string name, Family f, Tile tile, Pass pass, std::string reason) const {
    PlannedKernel k;
    k.name = std::move(name);
    k.family = f;
    k.backend = backend_;
    k.tile = tile;
    k.pass = pass;
    k.reason = std::move(reason);
    return k;
  }

  PlannedKernel row(const KernelVariant& v, Pass pass) {
    // A CPU backward made for a block not registered has a partner made for it too.
    if (pass != Pass::fwd && v.backend == Backend::cpu && cpu_tiled(v.family, Pass::fwd) && v.tile.block_m > 0)
      cpu_variant(v.family, v.tile, Pass::fwd);
    return plan_row(v, pass, reg_, &plan_.owned);
  }

  // CPU flash variants exist for any block: make the ones not registered once.
  const KernelVariant* cpu_variant(Family f, Tile t, Pass pass) {
    const KernelVariant made = make_cpu_variant(f, Tile{t.block_m, t.block_n, 0, 0}, pass);
    if (const KernelVariant* v = reg_.find(made.name)) return v;
    for (const KernelVariant& v : plan_.owned)
      if (v.name == made.name) return &v;
    plan_.owned.push_back(made);
    return &plan_.owned.back();
  }

  const SweepConfig& c_;
  Backend backend_;
  const Registry& reg_;
  SweepPlan& plan_;
};

}  // namespace

std::string row_key(const PlannedPoint& pp, const PlannedKernel& k) {
  Result r;
  r.problem = pp.problem;
  r.kernel = k.name;
  r.pass = k.pass;
  r.fp8 = pp.fp8;
  return r.key();
}

size_t SweepPlan::rows() const {
  size_t n = 0;
  for (const auto& p : points) n += p.kernels.size();
  return n;
}

PlannedKernel plan_row(const KernelVariant& v, Pass pass, const Registry& reg, const std::deque<KernelVariant>* extra) {
  PlannedKernel k{&v, v.name, v.family, v.backend, v.tile, "", pass, nullptr};
  if (pass == Pass::fwd) return k;
  if (v.pass != Pass::bwd)
    throw UsageError(fmt::format("{}: a {} row needs a backward variant", v.name, to_string(pass)));
  k.partner = reg.find(v.fwd_partner);
  if (!k.partner && extra)
    for (const KernelVariant& e : *extra)
      if (e.name == v.fwd_partner) k.partner = &e;
  if (!k.partner && !v.fwd_partner.empty()) {
    k.variant = nullptr;
    k.reason = fmt::format("its forward partner {} is not available", v.fwd_partner);
  }
  return k;
}

SweepPlan plan_sweep(const SweepConfig& c, Backend backend, const Registry& reg) {
  SweepPlan plan;
  const std::string selection = c.kernels.empty() ? std::string(to_string(backend)) : c.kernels;
  std::vector<const KernelVariant*> sel;
  std::vector<std::string> other_backend;
  for (const KernelVariant* v : reg.select(selection)) {
    if (v->backend == backend)
      sel.push_back(v);
    else
      other_backend.push_back(v->name);
  }
  if (sel.empty())
    throw UsageError(fmt::format(
        "--kernels '{}' selects no {} kernel{}; use --backend to pick the other back end", selection,
        to_string(backend),
        other_backend.empty() ? "" : fmt::format(" (it selects {} kernels: {}, ...)",
                                                 backend == Backend::cpu ? "cuda" : "cpu",
                                                 other_backend.front())));

  std::vector<PassGroup> groups;
  for (Pass pass : c.pass) {
    PassGroup g;
    g.pass = pass;
    std::vector<const KernelVariant*> of_pass;
    for (const auto* v : sel)
      if (v->pass == variant_pass(pass)) of_pass.push_back(v);
    check_pass_implemented(pass, sel, of_pass, selection);
    check_axes_supported(c, pass, of_pass);
    for (const auto* v : of_pass) {
      if (!g.of_family.count(v->family)) g.families.push_back(v->family);
      g.of_family[v->family].push_back(v);
    }
    groups.push_back(std::move(g));
  }

  Planner planner(c, backend, reg, plan);
  for (const AttnProblem& p : expand_points(c)) {
    PlannedPoint pp{p, {}, c.fp8_settings(p.dtype)};
    for (const PassGroup& g : groups) planner.add_rows(p, g, pp.kernels);
    plan.points.push_back(std::move(pp));
  }
  return plan;
}

}  // namespace fa
