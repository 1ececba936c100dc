// Registry selection (names, families, back ends, cpu.fa2, globs), supports(),
// glob_match, and the Result key / status names.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/result.h"
#include "registry/cpu_kernels.h"
#include "registry/kernel.h"

namespace fa {
namespace {

Registry cpu_registry() {
  Registry r;
  register_cpu_kernels(r);
  return r;
}

std::vector<std::string> names(const std::vector<const KernelVariant*>& vs) {
  std::vector<std::string> out;
  for (auto* v : vs) out.push_back(v->name);
  return out;
}

TEST(Registry, CpuKernelsRegistered) {
  const Registry r = cpu_registry();
  EXPECT_EQ(r.all().size(), 1u + 3 * 16);  // standard; fa1, fa2, fa2 backward at 16 tiles
  const KernelVariant* v = r.find("cpu.fa2.64x128");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->family, Family::fa2);
  EXPECT_EQ(v->backend, Backend::cpu);
  EXPECT_EQ(v->pass, Pass::fwd);
  EXPECT_EQ(v->fwd_partner, "");
  EXPECT_EQ(v->tile, (Tile{64, 128, 0, 0}));
  EXPECT_FALSE(v->default_tile);
  EXPECT_TRUE(r.find("cpu.fa1.64x64")->default_tile);
  EXPECT_TRUE(r.find("cpu.fa2.64x64")->default_tile);
  EXPECT_EQ(r.find("cpu.fa2.64x65"), nullptr);
  EXPECT_EQ(make_cpu_variant(Family::fa2, {48, 80, 0, 0}).name, "cpu.fa2.48x80");
  // The backward: named after the pass, its forward partner at the same tile.
  const KernelVariant* b = r.find("cpu.fa2.bwd.32x128");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->pass, Pass::bwd);
  EXPECT_EQ(b->fwd_partner, "cpu.fa2.32x128");
  EXPECT_NE(r.find(b->fwd_partner), nullptr);
  EXPECT_TRUE(r.find("cpu.fa2.bwd.64x64")->default_tile);
  EXPECT_FALSE(b->default_tile);
  const KernelVariant made = make_cpu_variant(Family::fa2, {48, 80, 0, 0}, Pass::bwd);
  EXPECT_EQ(made.name, "cpu.fa2.bwd.48x80");
  EXPECT_EQ(made.fwd_partner, "cpu.fa2.48x80");
  EXPECT_THROW(make_cpu_variant(Family::fa1, {64, 64, 0, 0}, Pass::bwd), UsageError);  // no CPU fa1 backward
  EXPECT_THROW(make_cpu_variant(Family::fa2, {64, 64, 0, 0}, Pass::fwd_bwd), UsageError);
}

TEST(Registry, SelectByNameFamilyBackendAndGlob) {
  const Registry r = cpu_registry();
  EXPECT_EQ(names(r.select("cpu.fa1.16x32")), (std::vector<std::string>{"cpu.fa1.16x32"}));
  EXPECT_EQ(r.select("fa2").size(), 32u);  // both passes: the pass axis filters them
  EXPECT_EQ(r.select("cpu.fa2").size(), 32u);
  EXPECT_EQ(r.select("cpu.fa1").size(), 16u);
  EXPECT_EQ(r.select("cpu.fa2.bwd.*").size(), 16u);
  EXPECT_EQ(r.select("cpu").size(), 49u);
  EXPECT_EQ(names(r.select("standard")), (std::vector<std::string>{"cpu.standard"}));
  EXPECT_EQ(names(r.select("cpu.fa?.128x128")),
            (std::vector<std::string>{"cpu.fa1.128x128", "cpu.fa2.128x128"}));
  EXPECT_EQ(r.select("*.64x*").size(), 12u);
  // Registry order, no duplicates, spaces trimmed.
  EXPECT_EQ(names(r.select(" cpu.fa2.16x16 , cpu.standard,cpu.fa2.16x16")),
            (std::vector<std::string>{"cpu.standard", "cpu.fa2.16x16"}));
}

TEST(Registry, UnknownEntryIsAUsageErrorNamingIt) {
  const Registry r = cpu_registry();
  for (const char* sel : {"fa9", "cpu.fa2,nonsense", "cuda", "cuda.fa2", "fa3", "cpu.fa2.1x1", "", " , "}) {
    try {
      r.select(sel);
      ADD_FAILURE() << "'" << sel << "' selected something on a cpu-only registry";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      if (std::string(sel) == "cpu.fa2,nonsense") {
        EXPECT_NE(what.find("'nonsense'"), std::string::npos) << what;
      }
    }
  }
}

TEST(Registry, AddRejectsDuplicatesAndSupportsChecksInOrder) {
  Registry r = cpu_registry();
  EXPECT_THROW(r.add(make_cpu_variant(Family::fa2, {64, 64, 0, 0})), UsageError);
  KernelVariant v;
  v.name = "x";
  v.dtypes = {DType::bf16};
  v.head_dims = {64, 128};
  v.refuse = [](const AttnProblem& p) { return p.causal ? std::string("no causal") : ""; };
  AttnProblem p;
  p.head_dim = 128;
  EXPECT_TRUE(v.supports(p).ok);
  p.causal = true;
  EXPECT_EQ(v.supports(p).reason, "no causal");
  p.head_dim = 96;
  EXPECT_EQ(v.supports(p).reason, "head_dim 96 not built");
  p.dtype = DType::f16;
  EXPECT_EQ(v.supports(p).reason, "dtype fp16 not built");
}

TEST(Registry, StandardRefusesWhatWouldNotFitInMemory) {
  AttnProblem p;
  p.batch = 64, p.heads = 64, p.seqlen_q = p.seqlen_k = 65536;  // 2 PiB of S and P
  const Support s = make_cpu_variant(Family::standard, {}).supports(p);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("GiB"), std::string::npos);
  EXPECT_TRUE(make_cpu_variant(Family::fa2, {64, 64, 0, 0}).supports(p).ok);
}

TEST(GlobMatch, StarAndQuestionMark) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("fa2.*", "fa2.bf16.hd128.128x64.w4.s2"));
  EXPECT_TRUE(glob_match("fa?.bf16.*.w4.*", "fa3.bf16.hd64.128x128.w4.s2"));
  EXPECT_TRUE(glob_match("*x64*", "cpu.fa1.16x64"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(glob_match("fa2.*", "fa3.bf16"));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_FALSE(glob_match("abc", "abcd"));
  EXPECT_FALSE(glob_match("a*b", "aXbY"));
}

TEST(Result, StatusNamesAndKey) {
  for (Status s : {Status::ok, Status::unsupported, Status::oom, Status::error, Status::fail})
    EXPECT_EQ(parse_status(to_string(s)), s);
  EXPECT_FALSE(parse_status("passed"));
  Result a;
  a.kernel = "cpu.fa2.64x64";
  a.problem.seqlen_q = 128;
  Result b = a;
  EXPECT_EQ(a.key(), b.key());
  EXPECT_NE(a.key().find("seqlen_q=128"), std::string::npos);
  b.problem.causal = true;
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.problem.heads_kv = 2, b.problem.heads = 2;
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.problem.softmax_scale = 0.1;
  EXPECT_NE(a.key(), b.key());
  b.problem.softmax_scale = 0.125;  // head_dim 64's default, given explicitly: the same computation
  EXPECT_EQ(a.key(), b.key());
  b = a;
  b.kernel = "cpu.fa2.64x32";
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.pass = Pass::fwd_bwd;
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.timing = TimingSummary{};  // measurements are not part of the identity
  b.seed = 99;
  b.fwd_kernel = "cpu.fa2.64x64";
  EXPECT_EQ(a.key(), b.key());
}

TEST(Pass, NamesAndTheFlashAttentionFlopConvention) {
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd}) EXPECT_EQ(parse_pass(to_string(p)), p);
  EXPECT_EQ(to_string(Pass::fwd_bwd), "fwd+bwd");
  EXPECT_FALSE(parse_pass("fwd_bwd"));
  EXPECT_FALSE(parse_pass("backward"));
  // Backward: five matmuls to the forward's two, so 2.5x; fwd+bwd 3.5x.
  EXPECT_EQ(flops_factor(Pass::fwd), 1.0);
  EXPECT_EQ(flops_factor(Pass::bwd), 2.5);
  EXPECT_EQ(flops_factor(Pass::fwd_bwd), 3.5);
}

}  // namespace
}  // namespace fa
