// `--block auto`'s length rules (registry/auto_tile.h): each names a tile that is
// compiled wherever its family and head dim are, their ranges do not overlap,
// and the planner takes the rule's tile where one applies and the default tile
// elsewhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "registry/auto_tile.h"
#include "registry/kernel.h"
#include "sweep/config.h"
#include "sweep/plan.h"

namespace fa {
namespace {

TEST(AutoTile, EveryRuleNamesATileCompiledInEachOfItsDtypes) {
  const Registry& reg = Registry::instance();
  int checked = 0;
  for (const AutoTileRule& r : auto_tile_rules()) {
    bool family_built = false;
    std::vector<DType> with_tile;
    for (const KernelVariant& v : reg.all()) {
      if (v.backend != Backend::cuda || v.family != r.family || v.pass != r.pass) continue;
      if (std::count(v.head_dims.begin(), v.head_dims.end(), r.head_dim) == 0) continue;
      family_built = true;
      if (r.names(v.tile))
        with_tile.insert(with_tile.end(), v.dtypes.begin(), v.dtypes.end());
    }
    if (!family_built) continue;  // not in this build (FA_BENCH_FAMILIES / FA_BENCH_HEAD_DIMS)
    ++checked;
    EXPECT_FALSE(r.dtypes.empty());
    for (DType t : r.dtypes)
      EXPECT_EQ(std::count(with_tile.begin(), with_tile.end(), t), 1)
          << to_string(r.family) << " hd" << r.head_dim << " " << r.block_m << "x" << r.block_n << " s" << r.stages << " "
          << to_string(t);
  }
  if (checked == 0) GTEST_SKIP() << "no rule's family and head dim is in this build (no CUDA kernels)";
}

TEST(AutoTile, RangesAreOrderedAndDoNotOverlap) {
  const auto& rules = auto_tile_rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    EXPECT_LE(rules[i].min_length, rules[i].max_length) << "rule " << i;
    for (size_t j = i + 1; j < rules.size(); ++j) {
      const AutoTileRule &a = rules[i], &b = rules[j];
      if (a.family != b.family || a.pass != b.pass || a.head_dim != b.head_dim || a.causal != b.causal) continue;
      bool shared = false;
      for (DType t : a.dtypes) shared |= std::count(b.dtypes.begin(), b.dtypes.end(), t) > 0;
      if (!shared) continue;
      EXPECT_TRUE(a.max_length < b.min_length || b.max_length < a.min_length) << "rules " << i << " and " << j;
    }
  }
}

KernelVariant fake_fa3(const std::string& name, Tile t, bool def, DType dtype = DType::bf16, int head_dim = 64) {
  KernelVariant v;
  v.name = name;
  v.family = Family::fa3;
  v.backend = Backend::cuda;
  v.tile = t;
  v.dtypes = {dtype};
  v.head_dims = {head_dim};
  v.default_tile = def;
  return v;
}

// The kernel `--block auto` plans for fa3 at one length and mask (hd64 bf16 unless told).
std::string planned(const Registry& reg, const std::string& seqlen, const std::string& causal,
                    const std::string& head_dim = "64", const std::string& dtype = "bf16") {
  ConfigSource src;
  apply_override(src, "head_dim", head_dim, "--head-dim");
  apply_override(src, "dtype", dtype, "--dtype");
  apply_override(src, "seqlen", seqlen, "--seqlen");
  apply_override(src, "causal", causal, "--causal");
  const SweepPlan p = plan_sweep(resolve_config(src), Backend::cuda, reg);
  EXPECT_EQ(p.rows(), 1u);
  return p.rows() == 1 ? p.points[0].kernels[0].name : "";
}

TEST(AutoTile, PlannerTakesTheRulesTileWhereOneAppliesAndTheDefaultElsewhere) {
  Registry reg;
  reg.add(fake_fa3("fa3.bf16.hd64.192x128.w16.s2", Tile{192, 128, 16, 2}, true));
  reg.add(fake_fa3("fa3.bf16.hd64.128x128.w12.s2", Tile{128, 128, 12, 2}, false));
  // The rules: hd64 runs 128x128 causal up to 2048 tokens, non-causal up to 1024.
  EXPECT_EQ(planned(reg, "2048", "true"), "fa3.bf16.hd64.128x128.w12.s2");
  EXPECT_EQ(planned(reg, "4096", "true"), "fa3.bf16.hd64.192x128.w16.s2");
  EXPECT_EQ(planned(reg, "512", "false"), "fa3.bf16.hd64.128x128.w12.s2");
  EXPECT_EQ(planned(reg, "1024", "false"), "fa3.bf16.hd64.128x128.w12.s2");
  EXPECT_EQ(planned(reg, "2048", "false"), "fa3.bf16.hd64.192x128.w16.s2");
  // A rule whose tile is not compiled falls back to the default tile.
  Registry only_default;
  only_default.add(fake_fa3("fa3.bf16.hd64.192x128.w16.s2", Tile{192, 128, 16, 2}, true));
  EXPECT_EQ(planned(only_default, "512", "true"), "fa3.bf16.hd64.192x128.w16.s2");
}

TEST(AutoTile, ARuleWithAStageCountTakesThatDepthOfTheTile) {
  // hd64 causal up to 2048: 128x128 with two K/V stages, where 128x128 is compiled with four as well.
  Registry reg;
  reg.add(fake_fa3("fa3.bf16.hd64.192x128.w16.s2", Tile{192, 128, 16, 2}, true));
  reg.add(fake_fa3("fa3.bf16.hd64.128x128.w12.s4", Tile{128, 128, 12, 4}, false));
  reg.add(fake_fa3("fa3.bf16.hd64.128x128.w12.s2", Tile{128, 128, 12, 2}, false));
  EXPECT_EQ(planned(reg, "512", "true"), "fa3.bf16.hd64.128x128.w12.s2");
  EXPECT_EQ(planned(reg, "4096", "true"), "fa3.bf16.hd64.192x128.w16.s2");
}

TEST(AutoTile, ARuleAppliesOnlyToItsDtypes) {
  // The e4m3 rule (hd128 causal up to 1024 runs 128x128) leaves bf16 at its default.
  Registry reg;
  reg.add(fake_fa3("fa3.e4m3.hd128.192x128.w16.s2", Tile{192, 128, 16, 2}, true, DType::e4m3, 128));
  reg.add(fake_fa3("fa3.e4m3.hd128.128x128.w12.s2", Tile{128, 128, 12, 2}, false, DType::e4m3, 128));
  reg.add(fake_fa3("fa3.bf16.hd128.192x128.w16.s2", Tile{192, 128, 16, 2}, true, DType::bf16, 128));
  reg.add(fake_fa3("fa3.bf16.hd128.128x128.w12.s2", Tile{128, 128, 12, 2}, false, DType::bf16, 128));
  EXPECT_EQ(planned(reg, "1024", "true", "128", "e4m3"), "fa3.e4m3.hd128.128x128.w12.s2");
  EXPECT_EQ(planned(reg, "2048", "true", "128", "e4m3"), "fa3.e4m3.hd128.192x128.w16.s2");
  EXPECT_EQ(planned(reg, "1024", "false", "128", "e4m3"), "fa3.e4m3.hd128.192x128.w16.s2");
  EXPECT_EQ(planned(reg, "1024", "true", "128", "bf16"), "fa3.bf16.hd128.192x128.w16.s2");
}

}  // namespace
}  // namespace fa
