// Modelled HBM traffic of a backward pass, from the kernel family's loop
// structure and tile (docs/MEASUREMENT.md, "Backward traffic"). Like the
// forward model it ignores caches.
#pragma once
#include "core/types.h"
#include "measure/traffic.h"

namespace fa {

// fa2 only so far (a tile of 0 means 64x64): the FA2 backward as cpu.fa2's
// backward runs it (kernels/cpu/fa2_bwd.cpp), which counts the same bytes.
// Throws std::invalid_argument for a family without a backward model.
Traffic traffic_model_bwd(Family, const AttnProblem&, const Tile&);

}  // namespace fa
