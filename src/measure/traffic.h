// Modelled HBM traffic per kernel family from its loop structure and tile.
// Formulas and the papers' bounds: docs/MEASUREMENT.md. The model ignores caches:
// the gap to measured DRAM bytes is L2 reuse.
#pragma once
#include <optional>
#include "core/traffic.h"
#include "core/types.h"

namespace fa {

// Element size is the problem's dtype for Q/K/V/O/S/P; statistics (m, l, LSE)
// are float32. A tile with block_m/block_n 0 is modelled at a default (traffic.cpp).
// o_dtype: what O is written in, where not output_dtype(p.dtype) (cuDNN's e4m3
// forward writes e4m3 O, one byte an element).
Traffic traffic_model(Family, const AttnProblem&, const Tile&, std::optional<DType> o_dtype = std::nullopt);

}  // namespace fa
