#include "sweep/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "registry/cpu_kernels.h"

namespace fa {

namespace {

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

std::string point_tag(Family f, const AttnProblem& p) {
  return fmt::format("{}.{}.hd{}", to_string(f), to_string(p.dtype), p.head_dim);
}

void check_axes_supported(const SweepConfig& c, const std::vector<const KernelVariant*>& sel) {
  for (int d : c.head_dim) {
    bool any = std::any_of(sel.begin(), sel.end(), [&](const KernelVariant* v) {
      return v->head_dims.empty() || std::count(v->head_dims.begin(), v->head_dims.end(), d);
    });
    if (!any) {
      std::set<int> dims;
      for (const auto* v : sel) dims.insert(v->head_dims.begin(), v->head_dims.end());
      throw UsageError(fmt::format("head_dim {}: no selected kernel supports it; the selected kernels "
                                   "support head_dim {}",
                                   d, fmt::join(dims, ", ")));
    }
  }
  for (DType t : c.dtype) {
    bool any = std::any_of(sel.begin(), sel.end(), [&](const KernelVariant* v) {
      return v->dtypes.empty() || std::count(v->dtypes.begin(), v->dtypes.end(), t);
    });
    if (!any)
      throw UsageError(fmt::format("dtype {}: no selected kernel supports it", to_string(t)));
  }
}

}  // namespace

size_t SweepPlan::rows() const {
  size_t n = 0;
  for (const auto& p : points) n += p.kernels.size();
  return n;
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
  check_axes_supported(c, sel);

  // Groups by family, in registry order of their first member.
  std::vector<Family> families;
  std::map<Family, std::vector<const KernelVariant*>> group;
  for (const auto* v : sel) {
    if (!group.count(v->family)) families.push_back(v->family);
    group[v->family].push_back(v);
  }

  // CPU flash variants exist for any block: make the ones not registered once.
  std::map<std::string, const KernelVariant*> made;
  auto cpu_variant = [&](Family f, Tile t) -> const KernelVariant* {
    std::string name = fmt::format("cpu.{}.{}x{}", to_string(f), t.block_m, t.block_n);
    if (const KernelVariant* v = reg.find(name)) return v;
    if (auto it = made.find(name); it != made.end()) return it->second;
    plan.owned.push_back(make_cpu_variant(f, Tile{t.block_m, t.block_n, 0, 0}));
    return made[name] = &plan.owned.back();
  };

  for (const AttnProblem& p : expand_points(c)) {
    PlannedPoint pp{p, {}};
    for (Family f : families) {
      std::vector<const KernelVariant*> fit;
      for (const auto* v : group[f])
        if (takes(*v, p)) fit.push_back(v);
      if (fit.empty()) {
        std::set<std::string> have;
        for (const auto* v : group[f])
          for (DType t : v->dtypes)
            for (int d : v->head_dims) have.insert(fmt::format("{} hd{}", to_string(t), d));
        PlannedKernel k;
        k.name = point_tag(f, p);
        k.family = f;
        k.backend = backend;
        k.reason = fmt::format("no {} {} variant for {} head_dim {}; built: {}", to_string(backend),
                               to_string(f), to_string(p.dtype), p.head_dim, fmt::join(have, ", "));
        pp.kernels.push_back(k);
        continue;
      }
      if (c.block_auto || tileless(fit)) {
        // auto: the family's default tile; a selection without one (e.g. one
        // non-default variant named explicitly) runs what was selected.
        std::vector<const KernelVariant*> defaults;
        for (const auto* v : fit)
          if (v->default_tile) defaults.push_back(v);
        for (const auto* v : (c.block_auto && !defaults.empty()) ? defaults : fit)
          pp.kernels.push_back(PlannedKernel{v, v->name, v->family, v->backend, v->tile, ""});
        continue;
      }
      for (const Tile& want : c.block) {
        if (backend == Backend::cpu && (f == Family::fa1 || f == Family::fa2)) {
          const KernelVariant* v = cpu_variant(f, want);
          pp.kernels.push_back(PlannedKernel{v, v->name, f, backend, v->tile, ""});
          continue;
        }
        bool found = false;
        for (const auto* v : fit)
          if (v->tile.block_m == want.block_m && v->tile.block_n == want.block_n) {
            pp.kernels.push_back(PlannedKernel{v, v->name, f, backend, v->tile, ""});
            found = true;
          }
        if (!found) {
          PlannedKernel k;
          k.name = fmt::format("{}.{}", point_tag(f, p), want.str());
          k.family = f;
          k.backend = backend;
          k.tile = want;
          k.reason = fmt::format("block {} is not compiled for {}; compiled tiles: {}", want.str(),
                                 point_tag(f, p), tiles_of(fit));
          pp.kernels.push_back(k);
        }
      }
    }
    plan.points.push_back(std::move(pp));
  }
  return plan;
}

}  // namespace fa
