// What a sweep will run: for every point, the kernels to run on it (or the
// `unsupported` rows to write for a block/family not available). Built and
// validated completely before any output file is opened, so a bad kernel name
// or head_dim is exit code 2 with nothing written.
#pragma once
#include <deque>
#include <string>
#include <vector>

#include "core/types.h"
#include "registry/kernel.h"
#include "sweep/config.h"

namespace fa {

struct PlannedKernel {
  const KernelVariant* variant = nullptr;  // null: write an `unsupported` row
  // For an unsupported row: the name, family, back end and tile asked for, and why.
  std::string name;
  Family family = Family::fa2;
  Backend backend = Backend::cpu;
  Tile tile;
  std::string reason;
};

struct PlannedPoint {
  AttnProblem problem;
  std::vector<PlannedKernel> kernels;
};

struct SweepPlan {
  std::vector<PlannedPoint> points;
  std::deque<KernelVariant> owned;  // CPU variants made for a --block not registered
  size_t rows() const;
};

// `kernels` is the config's selection ("" = every kernel of `backend`).
SweepPlan plan_sweep(const SweepConfig&, Backend backend, const Registry&);

}  // namespace fa
