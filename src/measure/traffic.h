// Modelled HBM traffic per kernel family from its loop structure and tile.
// Formulas and the papers' bounds: docs/MEASUREMENT.md. The model ignores caches:
// the gap to measured DRAM bytes is L2 reuse.
#pragma once
#include <optional>
#include "core/fp8_settings.h"
#include "core/traffic.h"
#include "core/types.h"

namespace fa {

// What a run's bytes depend on beyond the problem and the tile: fa3's e4m3
// split tail (kernels/fa3/fa3_fp8_split.h) is planned for the persistent grid,
// one block per SM, and does not run with per-block descales.
struct TrafficRun {
  int sm_count = 0;                 // the device's SMs; 0: not known, no split counted
  std::optional<Fp8Settings> fp8;   // the row's FP8 settings (Result::fp8)
};

// Element size is the problem's dtype for Q/K/V/O/S/P; statistics (m, l, LSE)
// are float32. A tile with block_m/block_n 0 is modelled at a default (traffic.cpp).
// o_dtype: what O is written in, where not output_dtype(p.dtype) (cuDNN's e4m3
// forward writes e4m3 O, one byte an element). run: where fa3's e4m3 forward
// splits its last round's tiles, their pieces' extra bytes (docs/MEASUREMENT.md).
Traffic traffic_model(Family, const AttnProblem&, const Tile&, std::optional<DType> o_dtype = std::nullopt,
                      const TrafficRun& run = {});

}  // namespace fa
