// The GPU kernels with planted faults (fa3's backward, kernels/fa3/fa3_bwd_fault.h,
// and its e4m3 forward, fa3_fp8_fault.h),
// as far as they can be checked without a GPU: the generated table against the
// fault enum, the variants made from it, that neither the registry nor a sweep
// nor `fa-bench list` ever shows one, and fa-check's names and messages for them
// (both in builds that have them and in builds that do not).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/gpu_entry.h"
#include "fa3/fa3_bwd_fault.h"
#include "fa3/fa3_fp8_fault.h"
#include "process_util.h"
#include "registry/cuda_kernels.h"
#include "registry/kernel.h"

namespace fa {
namespace {

// fa3's default bf16 head_dim 128 backward, as this build registers it (nullptr: not built).
const KernelVariant* planted_base() {
  for (const KernelVariant& v : Registry::instance().all())
    if (v.family == Family::fa3 && v.pass == Pass::bwd && v.default_tile && v.dtypes == std::vector{DType::bf16} &&
        v.head_dims == std::vector{128})
      return &v;
  return nullptr;
}

// fa3's e4m3 head_dim 128 forward, the base of the planted FP8 fault (nullptr: not built).
const KernelVariant* planted_fp8_base() {
  for (const KernelVariant& v : Registry::instance().all())
    if (v.family == Family::fa3 && v.pass == Pass::fwd && v.default_tile && v.dtypes == std::vector{DType::e4m3} &&
        v.head_dims == std::vector{128})
      return &v;
  return nullptr;
}

bool have_planted() { return !planted_gpu_kernel_entries().empty(); }

// The base name fa3's planted kernels would have in a build with them.
std::string base_name() {
  const KernelVariant* b = planted_base();
  return b ? b->name : "fa3.bwd.bf16.hd128.64x128.w12.s2";
}

test::ProcResult run_fa_check(const std::vector<std::string>& args, const std::string& tag) {
  auto dir = test::temp_dir(tag);
  return test::wait_for(test::spawn(FA_CHECK_EXE, args, dir), dir);
}

TEST(Fa3BwdFault, NamesAreDistinctAndNoneIsNotPlanted) {
  std::set<std::string_view> names{to_string(Fa3BwdFault::none)};
  for (Fa3BwdFault f : kPlantedFa3BwdFaults) {
    EXPECT_NE(f, Fa3BwdFault::none);
    EXPECT_TRUE(names.insert(to_string(f)).second) << to_string(f);
  }
}

// The table holds exactly fa3's bf16 head_dim 128 default backward once per
// planted fault (CMake's list in kernels/fa3/instances.cmake against the enum),
// where that backward is built, and nothing where it is not.
TEST(PlantedGpu, TableMatchesTheFaultEnumAndTheDefaultTile) {
  const KernelVariant* base = planted_base();
  if (!base) {
    EXPECT_TRUE(planted_gpu_kernel_entries().empty());
    EXPECT_TRUE(planted_gpu_variants().empty());
    GTEST_SKIP() << "no fa3 bf16 head_dim 128 backward in this build: the planted table is empty, as it must be";
  }
  const KernelVariant* fp8 = planted_fp8_base();
  ASSERT_NE(fp8, nullptr) << "fa3 at head_dim 128 builds the e4m3 forward beside the bf16 backward";
  // One group per base, in the order instances.cmake adds them (not asserted).
  const std::vector<PlantedGpuVariants> planted = planted_gpu_variants();
  ASSERT_EQ(planted.size(), 2u);
  auto faults_of = [&](const std::string& name) {
    for (const PlantedGpuVariants& g : planted)
      if (g.base == name) return g.faults;
    return std::vector<std::string>{};
  };
  std::vector<std::string> expected;
  for (Fa3BwdFault f : kPlantedFa3BwdFaults) expected.emplace_back(to_string(f));
  EXPECT_EQ(faults_of(base->name), expected);
  std::vector<std::string> expected_fp8;
  for (Fa3Fp8Fault f : kPlantedFa3Fp8Faults) expected_fp8.emplace_back(to_string(f));
  EXPECT_EQ(faults_of(fp8->name), expected_fp8);
  for (const PlantedGpuKernelEntry& e : planted_gpu_kernel_entries()) {
    const bool bwd = std::string(e.kernel.pass) == "bwd";
    const KernelVariant* b = bwd ? base : fp8;
    EXPECT_EQ(std::string(e.kernel.family), "fa3");
    EXPECT_EQ(e.kernel.dtype, bwd ? ElemType::bf16 : ElemType::e4m3) << e.fault;
    EXPECT_EQ(e.kernel.head_dim, 128);
    EXPECT_EQ((Tile{e.kernel.block_m, e.kernel.block_n, e.kernel.warps, e.kernel.stages}), b->tile) << e.fault;
  }
}

TEST(PlantedGpu, VariantCopiesItsBaseAndIsNeverRegistered) {
  const Registry& reg = Registry::instance();
  for (const KernelVariant& v : reg.all()) EXPECT_EQ(v.name.find('+'), std::string::npos) << v.name;
  EXPECT_FALSE(make_planted_gpu_variant(base_name(), "no_such_fault"));
  EXPECT_FALSE(make_planted_gpu_variant("fa3.bwd.fp16.hd128.64x128.w12.s2", "no_d_term"));
  const KernelVariant* base = planted_base();
  if (!base) {
    EXPECT_FALSE(make_planted_gpu_variant(base_name(), "no_d_term"));
    GTEST_SKIP() << "no fa3 bf16 head_dim 128 backward in this build";
  }
  for (Fa3BwdFault f : kPlantedFa3BwdFaults) {
    const std::optional<KernelVariant> v = make_planted_gpu_variant(base->name, to_string(f));
    ASSERT_TRUE(v) << to_string(f);
    EXPECT_EQ(v->name, base->name + "+" + std::string(to_string(f)));
    EXPECT_EQ(reg.find(v->name), nullptr);
    EXPECT_EQ(v->backend, Backend::cuda);
    EXPECT_EQ(v->family, Family::fa3);
    EXPECT_EQ(v->pass, Pass::bwd);
    EXPECT_EQ(v->tile, base->tile);
    EXPECT_EQ(v->fwd_partner, base->fwd_partner);
    EXPECT_FALSE(v->default_tile);
    EXPECT_EQ(v->dtypes, base->dtypes);
    EXPECT_EQ(v->head_dims, base->head_dims);
  }
  const KernelVariant* fp8 = planted_fp8_base();
  ASSERT_NE(fp8, nullptr);
  const std::optional<KernelVariant> twice = make_planted_gpu_variant(fp8->name, "v_descale_twice");
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->name, fp8->name + "+v_descale_twice");
  EXPECT_EQ(twice->pass, Pass::fwd);
  EXPECT_EQ(twice->tile, fp8->tile);
  EXPECT_TRUE(twice->fwd_partner.empty());
  EXPECT_EQ(twice->dtypes, fp8->dtypes);
  EXPECT_EQ(reg.find(twice->name), nullptr);
  // No selection the sweep understands reaches one: not a glob, not the family.
  for (const char* sel : {"fa3", "cuda", "fa3.bwd.*", "*"})
    for (const KernelVariant* v : reg.select(sel)) EXPECT_EQ(v->name.find('+'), std::string::npos) << sel;
}

TEST(PlantedGpu, NotListedAndNotSweepable) {
  auto dir = test::temp_dir("planted_list");
  test::ProcResult list = test::run_fa_bench({"list"}, dir);
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(list.out.find('+'), std::string::npos) << list.out;
  test::ProcResult sweep = test::run_fa_bench(
      {"sweep", "--backend", "cpu", "--kernels", base_name() + "+no_d_term", "--seqlen", "64", "--head-dim", "128"},
      dir);
  EXPECT_EQ(sweep.code, 2) << sweep.out << sweep.err;
}

// fa-check's names, checked before any device is looked for (so these hold on a
// machine without a GPU, and with one).
TEST(PlantedGpu, FaCheckNamesAndMessages) {
  const std::string shape = "b1 h2/2 q8 k8 d128 bf16";
  const test::ProcResult on_cpu =
      run_fa_check({"--backend", "cpu", "--kernels", base_name() + "+no_d_term", "--case", shape}, "planted_cpu");
  EXPECT_EQ(on_cpu.code, 2) << on_cpu.err;
  const test::ProcResult unknown =
      run_fa_check({"--backend", "cpu", "--kernels", base_name() + "+no_such_fault", "--case", shape},
                   "planted_unknown");
  EXPECT_EQ(unknown.code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("no_such_fault"), std::string::npos) << unknown.err;
  const test::ProcResult other_base =
      run_fa_check({"--backend", "cpu", "--kernels", "cpu.fa1.64x64+no_d_term", "--case", shape}, "planted_base");
  EXPECT_EQ(other_base.code, 2) << other_base.err;
  EXPECT_NE(other_base.err.find("cpu.fa2"), std::string::npos) << other_base.err;
  EXPECT_NE(other_base.err.find(have_planted() ? base_name() : "head_dim 128"), std::string::npos) << other_base.err;
  const test::ProcResult with_kernels =
      run_fa_check({"--self-test", "--backend", "cuda", "--kernels", "fa3"}, "planted_selftest_kernels");
  EXPECT_EQ(with_kernels.code, 2) << with_kernels.err;
  EXPECT_NE(with_kernels.err.find("--self-test"), std::string::npos) << with_kernels.err;

  if (have_planted()) {
    // The cuda back end's kernel asked for on the cpu one.
    EXPECT_NE(on_cpu.err.find("--backend cuda"), std::string::npos) << on_cpu.err;
    // Every known fault is listed.
    for (Fa3BwdFault f : kPlantedFa3BwdFaults)
      EXPECT_NE(unknown.err.find(std::string(to_string(f))), std::string::npos) << unknown.err;
    return;
  }
  // A build without them says so, for a kernel and for the self-test, before any
  // device is looked for.
  for (const std::string& err : {on_cpu.err, unknown.err})
    EXPECT_NE(err.find("this build has no GPU kernel with planted faults"), std::string::npos) << err;
  const test::ProcResult self_test = run_fa_check({"--self-test", "--backend", "cuda"}, "planted_selftest");
  EXPECT_EQ(self_test.code, 2) << self_test.err;
  EXPECT_NE(self_test.err.find("--self-test --backend cuda: this build has no GPU kernel with planted faults"),
            std::string::npos)
      << self_test.err;
  EXPECT_NE(self_test.err.find("FA_BENCH_HEAD_DIMS"), std::string::npos) << self_test.err;
}

}  // namespace
}  // namespace fa
