// Sweep settings: axis syntax, config files, CLI overrides, derived axes, and
// the plan (block selection, unsupported rows, head_dim checks).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "process_util.h"
#include "test_util.h"
#include "sweep/axis.h"
#include "sweep/config.h"
#include "sweep/plan.h"

namespace fa {
namespace {

using test::temp_dir;

std::string write_file(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  auto p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

using test::usage_message;

TEST(Axis, MultiplicativeAndAdditiveRanges) {
  EXPECT_EQ(parse_int_axis("512:16384:x2", "seqlen"),
            (std::vector<int>{512, 1024, 2048, 4096, 8192, 16384}));
  EXPECT_EQ(parse_int_axis("64:256:+64", "head_dim"), (std::vector<int>{64, 128, 192, 256}));
  // The stop is inclusive only when the progression hits it.
  EXPECT_EQ(parse_int_axis("100:1000:x3", "seqlen"), (std::vector<int>{100, 300, 900}));
  EXPECT_EQ(parse_int_axis("7", "seqlen"), (std::vector<int>{7}));
  EXPECT_EQ(parse_int_axis(" 128 , 512:1024:x2", "seqlen"), (std::vector<int>{128, 512, 1024}));
}

TEST(Axis, BadRangesNameTheAxis) {
  for (const char* bad : {"512:128:x2", "512:1024:x1", "512:1024:*2", "512:1024", "12a", "1,,2", "",
                          "0:10:x2", "1:10:+0", "99999999999"}) {
    std::string msg = usage_message([&] { parse_int_axis(bad, "--seqlen"); });
    EXPECT_NE(msg.find("--seqlen"), std::string::npos) << bad << ": " << msg;
  }
  EXPECT_THROW(parse_int_axis("1:100000:+1", "seqlen"), UsageError);  // runaway sweep
}

TEST(Axis, BoolsBlocksAndBytes) {
  EXPECT_EQ(parse_bool_axis("both", "causal"), (std::vector<bool>{false, true}));
  EXPECT_EQ(parse_bool_axis("true", "causal"), (std::vector<bool>{true}));
  EXPECT_THROW(parse_bool_axis("maybe", "causal"), UsageError);
  auto tiles = parse_block_list("64x64,128x32", "block");
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[1].block_m, 128);
  EXPECT_EQ(tiles[1].block_n, 32);
  EXPECT_THROW(parse_block_list("64", "block"), UsageError);
  EXPECT_THROW(parse_block_list("0x64", "block"), UsageError);
  try {  // auto in a list: told that it stands alone, not that it is no tile
    parse_block_list("auto,64x64", "--block");
    ADD_FAILURE() << "auto,64x64 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'auto' stands alone"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_bytes("4G", "m"), int64_t(4) << 30);
  EXPECT_EQ(parse_bytes("512M", "m"), int64_t(512) << 20);
  EXPECT_THROW(parse_bytes("-1", "m"), UsageError);
}

TEST(Config, FileThenOverridesThenPoints) {
  auto dir = temp_dir("config");
  auto path = write_file(dir, "c.json", R"({
    "seqlen": "128:512:x2", "head_dim": [64, 128], "batch": 2, "heads": 4,
    "causal": "both", "dtype": ["bf16", "fp16"], "warmup": 7 })");
  ConfigSource src = load_config_file(path);
  apply_override(src, "head_dim", "64", "--head-dim");
  SweepConfig c = resolve_config(src);
  EXPECT_EQ(c.seqlen, (std::vector<int>{128, 256, 512}));
  EXPECT_EQ(c.head_dim, (std::vector<int>{64}));
  EXPECT_EQ(c.timing.warmup, 7);
  auto points = expand_points(c);
  ASSERT_EQ(points.size(), 3u * 1 * 2 * 2);  // seqlen x head_dim x causal x dtype
  for (const auto& p : points) {
    EXPECT_EQ(p.batch, 2);
    EXPECT_EQ(p.heads, 4);
    EXPECT_EQ(p.heads_kv, 4);  // default: equal to heads
    EXPECT_EQ(p.seqlen_k, p.seqlen_q);
  }
  EXPECT_EQ(points.front().seqlen_q, 128);  // seqlen is innermost
  EXPECT_EQ(points[1].seqlen_q, 256);
}

TEST(Config, PaperSweepDerivesBatchAndHeads) {
  ConfigSource src = load_config_file(std::string(FA_SOURCE_DIR) + "/configs/paper-fwd.json");
  auto points = expand_points(resolve_config(src));
  ASSERT_EQ(points.size(), 6u * 3 * 2);  // seqlen 512..16384 x head_dim x causal
  for (const auto& p : points) {
    EXPECT_EQ(int64_t(p.batch) * p.seqlen_q, 16384) << p.describe();
    EXPECT_EQ(p.heads * p.head_dim, 2048) << p.describe();
    EXPECT_EQ(p.dtype, DType::bf16);
  }
}

TEST(Config, CommandLineChoiceOfAxisFormWins) {
  auto dir = temp_dir("config_form");
  auto path = write_file(dir, "c.json", R"({"total_tokens": 4096, "hidden": 512, "head_dim": 64, "seqlen": 1024})");
  ConfigSource src = load_config_file(path);
  apply_override(src, "batch", "3", "--batch");
  apply_override(src, "heads", "2", "--heads");
  auto points = expand_points(resolve_config(src));
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].batch, 3);
  EXPECT_EQ(points[0].heads, 2);
  // Without the overrides: batch 4096/1024, heads 512/64.
  auto derived = expand_points(resolve_config(load_config_file(path)));
  EXPECT_EQ(derived[0].batch, 4);
  EXPECT_EQ(derived[0].heads, 8);
}

TEST(Config, ErrorsNameFileLineAndKey) {
  auto dir = temp_dir("config_errors");
  auto bad_json = write_file(dir, "bad.json", "{\n  \"seqlen\": 128,\n  \"head_dim\": [64,\n}\n");
  std::string msg = usage_message([&] { load_config_file(bad_json); });
  EXPECT_NE(msg.find("bad.json:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("head_dim"), std::string::npos) << msg;

  auto unknown = write_file(dir, "unknown.json", "{\n  \"seqlen\": 128,\n  \"seqlens\": 256\n}\n");
  msg = usage_message([&] { load_config_file(unknown); });
  EXPECT_NE(msg.find("unknown.json:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'seqlens'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'seqlen'"), std::string::npos) << msg;

  auto wrong_type = write_file(dir, "type.json", "{\"seqlen\": {\"a\": 1}}");
  msg = usage_message([&] { resolve_config(load_config_file(wrong_type)); });
  EXPECT_NE(msg.find("type.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'seqlen'"), std::string::npos) << msg;

  auto both = write_file(dir, "both.json", "{\"batch\": 1, \"total_tokens\": 1024}");
  EXPECT_THROW(resolve_config(load_config_file(both)), UsageError);
  EXPECT_THROW(load_config_file((dir / "missing.json").string()), UsageError);

  ConfigSource src;
  apply_override(src, "heads", "6", "--heads");
  apply_override(src, "heads_kv", "4", "--heads-kv");
  msg = usage_message([&] { expand_points(resolve_config(src)); });
  EXPECT_NE(msg.find("divisible"), std::string::npos) << msg;
}

TEST(Config, ResolvedConfigLoadsBack) {
  ConfigSource src = load_config_file(std::string(FA_SOURCE_DIR) + "/configs/smoke.json");
  SweepConfig c = resolve_config(src);
  c.seed = 42;
  SweepConfig again = resolve_config(config_from_json(c.to_json(), "metadata.config"));
  EXPECT_EQ(again.to_json(), c.to_json());
  EXPECT_EQ(expand_points(again), expand_points(c));
}

// A registry of fake cuda variants: only what planning looks at.
KernelVariant fake(const std::string& name, Family f, Tile t, std::vector<int> dims, bool def) {
  KernelVariant v;
  v.name = name;
  v.family = f;
  v.backend = Backend::cuda;
  v.tile = t;
  v.dtypes = {DType::bf16};
  v.head_dims = std::move(dims);
  v.default_tile = def;
  return v;
}

TEST(Plan, CudaBlocksFilterCompiledTilesAndSayWhichExist) {
  Registry reg;
  reg.add(fake("fa2.bf16.hd128.128x64.w4.s2", Family::fa2, Tile{128, 64, 4, 2}, {128}, true));
  reg.add(fake("fa2.bf16.hd128.64x64.w4.s2", Family::fa2, Tile{64, 64, 4, 2}, {128}, false));
  reg.add(fake("fa2.bf16.hd64.128x128.w4.s2", Family::fa2, Tile{128, 128, 4, 2}, {64}, true));
  ConfigSource src;
  apply_override(src, "head_dim", "128", "--head-dim");
  apply_override(src, "seqlen", "256", "--seqlen");

  SweepPlan autop = plan_sweep(resolve_config(src), Backend::cuda, reg);
  ASSERT_EQ(autop.rows(), 1u);
  EXPECT_EQ(autop.points[0].kernels[0].name, "fa2.bf16.hd128.128x64.w4.s2");  // the default tile

  apply_override(src, "block", "64x64,32x32", "--block");
  SweepPlan p = plan_sweep(resolve_config(src), Backend::cuda, reg);
  ASSERT_EQ(p.rows(), 2u);
  EXPECT_EQ(p.points[0].kernels[0].variant->name, "fa2.bf16.hd128.64x64.w4.s2");
  const PlannedKernel& missing = p.points[0].kernels[1];
  EXPECT_EQ(missing.variant, nullptr);
  EXPECT_NE(missing.reason.find("32x32"), std::string::npos) << missing.reason;
  EXPECT_NE(missing.reason.find("128x64.w4.s2"), std::string::npos) << missing.reason;
  EXPECT_NE(missing.reason.find("64x64.w4.s2"), std::string::npos) << missing.reason;

  apply_override(src, "head_dim", "96", "--head-dim");
  std::string msg = usage_message([&] { plan_sweep(resolve_config(src), Backend::cuda, reg); });
  EXPECT_NE(msg.find("head_dim 96"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64, 128"), std::string::npos) << msg;

  // A cpu sweep of this registry has nothing to run.
  apply_override(src, "head_dim", "128", "--head-dim");
  EXPECT_THROW(plan_sweep(resolve_config(src), Backend::cpu, reg), UsageError);
}

// A CPU sweep of cpu.fa2 and cpu.standard at head_dim 32.
ConfigSource cpu_sweep(const std::string& seqlen) {
  ConfigSource src;
  apply_override(src, "kernels", "cpu.fa2,cpu.standard", "--kernels");
  apply_override(src, "seqlen", seqlen, "--seqlen");
  apply_override(src, "head_dim", "32", "--head-dim");
  return src;
}

TEST(Plan, CpuBlocksAreMadeOnDemand) {
  ConfigSource src = cpu_sweep("100");
  apply_override(src, "block", "48x80", "--block");
  SweepPlan p = plan_sweep(resolve_config(src), Backend::cpu, Registry::instance());
  ASSERT_EQ(p.rows(), 2u);
  std::vector<std::string> names;
  for (const auto& k : p.points[0].kernels) {
    ASSERT_NE(k.variant, nullptr);
    names.push_back(k.variant->name);
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu.fa2.48x80"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu.standard"), names.end());
  EXPECT_THROW(
      {
        ConfigSource s2 = src;
        apply_override(s2, "kernels", "no.such.kernel", "--kernels");
        plan_sweep(resolve_config(s2), Backend::cpu, Registry::instance());
      },
      UsageError);
}

TEST(Config, PassAxis) {
  ConfigSource src;
  EXPECT_EQ(resolve_config(src).pass, (std::vector<Pass>{Pass::fwd}));  // default
  apply_override(src, "pass", "bwd,fwd+bwd", "--pass");
  const SweepConfig c = resolve_config(src);
  EXPECT_EQ(c.pass, (std::vector<Pass>{Pass::bwd, Pass::fwd_bwd}));
  EXPECT_EQ(c.to_json()["pass"], (nlohmann::json{"bwd", "fwd+bwd"}));
  EXPECT_EQ(resolve_config(config_from_json(c.to_json(), "metadata.config")).pass, c.pass);
  auto dir = temp_dir("config_pass");
  const std::string file = write_file(dir, "p.json", "{\"pass\": [\"fwd\", \"bwd\"]}");
  EXPECT_EQ(resolve_config(load_config_file(file)).pass, (std::vector<Pass>{Pass::fwd, Pass::bwd}));
  for (const char* bad : {"backward", "fwd,fwd", "", "fwd+"}) {
    ConfigSource b;
    apply_override(b, "pass", bad, "--pass");
    const std::string msg = usage_message([&] { resolve_config(b); });
    EXPECT_NE(msg.find("--pass"), std::string::npos) << bad << ": " << msg;
  }
}

// Rows = points x passes x kernels: fwd rows run forward variants, bwd and
// fwd+bwd rows the backward ones, each with its forward partner.
TEST(Plan, PassesPickTheirVariantsAndPartners) {
  ConfigSource src = cpu_sweep("64,100");
  apply_override(src, "pass", "fwd,bwd,fwd+bwd", "--pass");
  const SweepPlan p = plan_sweep(resolve_config(src), Backend::cpu, Registry::instance());
  ASSERT_EQ(p.points.size(), 2u);
  ASSERT_EQ(p.rows(), 2u * (2 + 1 + 1));  // standard and fa2 forward; fa2's backward twice
  const auto& ks = p.points[0].kernels;
  std::vector<std::string> got;
  for (const auto& k : ks) got.push_back(k.name + " " + std::string(to_string(k.pass)));
  EXPECT_EQ(got, (std::vector<std::string>{"cpu.standard fwd", "cpu.fa2.64x64 fwd", "cpu.fa2.bwd.64x64 bwd",
                                           "cpu.fa2.bwd.64x64 fwd+bwd"}));
  for (const auto& k : ks) {
    ASSERT_NE(k.variant, nullptr);
    EXPECT_EQ(k.variant->pass, k.pass == Pass::fwd ? Pass::fwd : Pass::bwd);
    if (k.pass == Pass::fwd) {
      EXPECT_EQ(k.partner, nullptr);
    } else {
      ASSERT_NE(k.partner, nullptr);
      EXPECT_EQ(k.partner->name, "cpu.fa2.64x64");
    }
  }
  // A CPU backward at a block not registered: made, with a partner made for it.
  apply_override(src, "block", "48x80", "--block");
  apply_override(src, "pass", "bwd", "--pass");
  const SweepPlan made = plan_sweep(resolve_config(src), Backend::cpu, Registry::instance());
  ASSERT_EQ(made.rows(), 2u);  // cpu.standard has no backward on the CPU
  const PlannedKernel& k = made.points[0].kernels[0];
  ASSERT_NE(k.variant, nullptr);
  EXPECT_EQ(k.variant->name, "cpu.fa2.bwd.48x80");
  ASSERT_NE(k.partner, nullptr);
  EXPECT_EQ(k.partner->name, "cpu.fa2.48x80");
}

TEST(Plan, APassNoSelectedKernelImplementsIsAUsageError) {
  ConfigSource src;
  apply_override(src, "seqlen", "64", "--seqlen");
  apply_override(src, "kernels", "cpu.fa1", "--kernels");
  apply_override(src, "pass", "fwd,bwd", "--pass");
  std::string msg = usage_message([&] { plan_sweep(resolve_config(src), Backend::cpu, Registry::instance()); });
  EXPECT_NE(msg.find("pass bwd: no selected kernel implements the backward pass"), std::string::npos) << msg;
  apply_override(src, "kernels", "cpu.fa2.bwd.64x64", "--kernels");
  apply_override(src, "pass", "fwd", "--pass");
  msg = usage_message([&] { plan_sweep(resolve_config(src), Backend::cpu, Registry::instance()); });
  EXPECT_NE(msg.find("pass fwd: no selected kernel implements the forward pass"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--pass bwd"), std::string::npos) << msg;
}

// A cuda backward whose default tile is marked runs under --block auto, with
// the default forward of its family, dtype and head_dim as partner; a partner
// that is not in the registry makes the row unsupported.
TEST(Plan, CudaBackwardDefaultsAndPartners) {
  Registry reg;
  reg.add(fake("fa2.bf16.hd128.128x64.w4.s2", Family::fa2, Tile{128, 64, 4, 2}, {128}, true));
  KernelVariant b1 = fake("fa2.bwd.bf16.hd128.128x128.w8.s2", Family::fa2, Tile{128, 128, 8, 2}, {128}, true);
  KernelVariant b2 = fake("fa2.bwd.bf16.hd128.64x128.w8.s2", Family::fa2, Tile{64, 128, 8, 2}, {128}, false);
  KernelVariant orphan = fake("fa3.bwd.bf16.hd128.64x128.w12.s2", Family::fa3, Tile{64, 128, 12, 2}, {128}, true);
  for (KernelVariant* v : {&b1, &b2, &orphan}) v->pass = Pass::bwd;
  b1.fwd_partner = b2.fwd_partner = "fa2.bf16.hd128.128x64.w4.s2";
  orphan.fwd_partner = "fa3.bf16.hd128.128x128.w12.s2";
  reg.add(b1);
  reg.add(b2);
  reg.add(orphan);
  ConfigSource src;
  apply_override(src, "head_dim", "128", "--head-dim");
  apply_override(src, "seqlen", "256", "--seqlen");
  apply_override(src, "pass", "bwd", "--pass");
  const SweepPlan p = plan_sweep(resolve_config(src), Backend::cuda, reg);
  ASSERT_EQ(p.rows(), 2u);
  EXPECT_EQ(p.points[0].kernels[0].name, "fa2.bwd.bf16.hd128.128x128.w8.s2");
  ASSERT_NE(p.points[0].kernels[0].partner, nullptr);
  EXPECT_EQ(p.points[0].kernels[0].partner->name, "fa2.bf16.hd128.128x64.w4.s2");
  EXPECT_EQ(p.points[0].kernels[1].variant, nullptr);
  EXPECT_NE(p.points[0].kernels[1].reason.find("forward partner fa3.bf16.hd128.128x128.w12.s2 is not available"),
            std::string::npos)
      << p.points[0].kernels[1].reason;
  apply_override(src, "block", "64x128", "--block");
  const SweepPlan q = plan_sweep(resolve_config(src), Backend::cuda, reg);
  ASSERT_GE(q.rows(), 1u);
  EXPECT_EQ(q.points[0].kernels[0].name, "fa2.bwd.bf16.hd128.64x128.w8.s2");
}

}  // namespace
}  // namespace fa
