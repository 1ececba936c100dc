#include "registry/auto_tile.h"

#include <algorithm>

namespace fa {

const std::vector<AutoTileRule>& auto_tile_rules() {
  // fa3 forward on the H200 (bf16, paper-fwd shapes, cuDNN in the same run; two
  // repetitions within 0.5 % of each other): where another compiled tile beat the
  // default by more than 1 % at 512-2048 tokens, or in every repetition of three
  // runs. hd64: the two-consumer 128x128 tile with the cross-tile pipeline and no
  // ping-pong turns, causal up to 2048 (+3-4 % at 512-1024, +1.2 % at 2048) and
  // non-causal up to 1024 (+1.1 % at 512; +0.5-0.7 % at 1024 in each of three runs,
  // where 192 rows leave each head's last tile a third full; 0.92 at 2048:
  // PERF_NOTES fa3-turns-by-length, fa3-hd64-non-causal-1024);
  // hd128 non-causal 2048: 128x160 (+2.2 %); hd256 up to 2048: 128x128 with one
  // K/V stage and the serial block loop, 1-12 % ahead of 128x80 (and of the 128x64
  // it replaces) there, even at 4096, 7-11 % behind from 8192 (PERF_NOTES
  // fa3-hd256-128-keys).
  // e4m3 hd128 causal up to 1024: the two-warpgroup 128x128 tile, 5-10 % ahead
  // of the three-warpgroup default there (fa3-fp8-three-warpgroups).
  static const std::vector<DType> half = {DType::bf16, DType::f16}, fp8 = {DType::e4m3};
  static const std::vector<AutoTileRule> rules = {
      {Family::fa3, Pass::fwd, 64, true, 0, 2048, 128, 128, 2, half},
      {Family::fa3, Pass::fwd, 64, false, 0, 1024, 128, 128, 2, half},
      {Family::fa3, Pass::fwd, 128, false, 1025, 2048, 128, 160, 2, half},
      {Family::fa3, Pass::fwd, 256, false, 0, 2048, 128, 128, 1, half},
      {Family::fa3, Pass::fwd, 256, true, 0, 2048, 128, 128, 1, half},
      {Family::fa3, Pass::fwd, 128, true, 0, 1024, 128, 128, 2, fp8},
  };
  return rules;
}

std::optional<AutoTileRule> auto_tile_rule(Family f, Pass variant_pass, const AttnProblem& p) {
  const int64_t length = std::max<int64_t>(p.seqlen_q, p.seqlen_k);
  for (const AutoTileRule& r : auto_tile_rules())
    if (r.family == f && r.pass == variant_pass && r.head_dim == p.head_dim && r.causal == p.causal &&
        length >= r.min_length && length <= r.max_length &&
        std::find(r.dtypes.begin(), r.dtypes.end(), p.dtype) != r.dtypes.end())
      return r;
  return std::nullopt;
}

}  // namespace fa
