// Modelled HBM traffic of a backward pass, from the kernel family's loop
// structure and tile (docs/MEASUREMENT.md, "fa2 backward" to "A pass's
// traffic"). Like the forward model it ignores caches.
#pragma once
#include <optional>

#include "core/types.h"
#include "measure/traffic.h"

namespace fa {

// fa2 (a tile of 0 means 64x64): the FA2 backward as cpu.fa2's backward runs it
// (kernels/cpu/fa2_bwd.cpp), which counts the same bytes; fa3: the same loop
// order with its own tile; fa1: the FA1 paper's Algorithm 4 (kernels/fa1/fa1_bwd.cuh);
// standard: S, P, dP, dS through HBM (kernels/standard/standard_bwd.cuh).
// nullopt for cudnn, whose backward's internals are not ours to model.
std::optional<Traffic> traffic_model_bwd(Family, const AttnProblem&, const Tile&);

}  // namespace fa
