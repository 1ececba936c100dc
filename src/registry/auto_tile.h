// `--block auto`'s choice where the best tile depends on the problem's length:
// a family's default tile (the `*` in its instances.cmake) unless a rule here
// names another compiled tile (block_m x block_n and stage count) for the pass,
// head dim, mask and length. Each
// rule comes from a measurement (docs/PERF_NOTES.md, fa3-tile-by-length); a
// test holds every rule against the registry (the tile must be compiled for
// each of the rule's dtypes wherever its family and head dim are).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/types.h"

namespace fa {

struct AutoTileRule {
  Family family = Family::fa3;
  Pass pass = Pass::fwd;  // fwd or bwd: the variant's pass
  int head_dim = 0;
  bool causal = false;
  int64_t min_length = 0, max_length = 0;  // inclusive; length = max(seqlen_q, seqlen_k)
  int block_m = 0, block_n = 0;
  int stages = 0;  // the K/V ring's depth: one block_m x block_n may be compiled with several
  std::vector<DType> dtypes;  // the input dtypes the rule applies to

  // Whether a variant's tile is the one this rule names (warps follow from block_m).
  bool names(const Tile& t) const { return t.block_m == block_m && t.block_n == block_n && t.stages == stages; }
};

const std::vector<AutoTileRule>& auto_tile_rules();

// The first rule matching the family, the variant pass and p (its dtype included), if any.
std::optional<AutoTileRule> auto_tile_rule(Family, Pass variant_pass, const AttnProblem&);

}  // namespace fa
