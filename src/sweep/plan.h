// What a sweep will run: for every point, the rows of each pass (fwd: the
// selection's forward variants; bwd and fwd+bwd: its backward variants, each
// with its forward partner), or the `unsupported` rows to write for a block or
// family not available. Built and validated completely before any output file
// is opened, so a bad kernel name, head_dim or pass is exit code 2 with nothing
// written.
#pragma once
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/fp8_settings.h"
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
  Pass pass = Pass::fwd;  // what the row measures; bwd and fwd+bwd run a bwd variant
  // bwd, fwd+bwd: the forward that gives the backward its O and LSE (variant->fwd_partner).
  const KernelVariant* partner = nullptr;
};

struct PlannedPoint {
  AttnProblem problem;
  std::vector<PlannedKernel> kernels;  // every pass's rows, in the config's pass order
  // e4m3 points (SweepConfig::fp8_settings): how the inputs are quantized,
  // recorded on each of the point's rows.
  std::optional<Fp8Settings> fp8;
};

// The row's Result::key() (kernel, problem, pass, FP8 settings): what --resume
// skips, compare pairs, and plan_hash (sweep/shard.h) hashes.
std::string row_key(const PlannedPoint&, const PlannedKernel&);

struct SweepPlan {
  std::vector<PlannedPoint> points;
  std::deque<KernelVariant> owned;  // CPU variants made for a --block not registered
  size_t rows() const;
};

// `kernels` is the config's selection ("" = every kernel of `backend`).
SweepPlan plan_sweep(const SweepConfig&, Backend backend, const Registry&);

// The row's planned kernel for variant v, resolving v's forward partner among
// the registry's variants (and `extra`, when given) for bwd and fwd+bwd: an
// `unsupported` row naming the partner when it cannot be found.
PlannedKernel plan_row(const KernelVariant& v, Pass, const Registry&,
                       const std::deque<KernelVariant>* extra = nullptr);

}  // namespace fa
