// fa3's e4m3 forward through the sweep on the GPU: every scaling mode it takes
// passes the FP8 rule at ragged, causal and GQA shapes and reports both error
// figures; block descales too at head dims 128 and 256, and are an `unsupported`
// row at 64 (256-key blocks). Skips without a device or without the fa3 family.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "measure/executor.h"
#include "registry/kernel.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "sweep/runner.h"

namespace fa {
namespace {

std::vector<Result> sweep(Fp8Scaling scaling, bool hadamard, Executor& ex) {
  ConfigSource src;
  apply_override(src, "dtype", "e4m3", "--dtype");
  apply_override(src, "kernels", "fa3.e4m3.*", "--kernels");
  apply_override(src, "seqlen", "1,257,1000", "--seqlen");
  apply_override(src, "head_dim", "64,128,256", "--head-dim");
  apply_override(src, "heads", "4", "--heads");
  apply_override(src, "heads_kv", "2,4", "--heads-kv");
  apply_override(src, "causal", "both", "--causal");
  apply_override(src, "fp8_scaling", std::string(to_string(scaling)), "--fp8-scaling");
  if (hadamard) apply_override(src, "fp8_hadamard", "true", "--fp8-hadamard");
  SweepConfig c = resolve_config(src);
  c.validate_only = true;
  const SweepPlan plan = plan_sweep(c, Backend::cuda, Registry::instance());
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  run_sweep(plan, c, 21, ex, 0, {}, hooks);
  return rows;
}

TEST(GpuFp8Sweep, Fa3PassesTheFp8RuleAndReportsBothFigures) {
  std::string why;
  auto ex = make_cuda_executor(0, &why);
  if (!ex) GTEST_SKIP() << "no CUDA executor: " << why;
  if (!Registry::instance().find("fa3.e4m3.hd128.128x128.w12.s2")) GTEST_SKIP() << "fa3 e4m3 not built";
  for (Fp8Scaling s : {Fp8Scaling::tensor, Fp8Scaling::head})
    for (bool hadamard : {false, true}) {
      const std::vector<Result> rows = sweep(s, hadamard, *ex);
      ASSERT_FALSE(rows.empty());
      for (const Result& r : rows) {
        if (r.status == Status::unsupported) {
          EXPECT_NE(r.reason.find("sm_90"), std::string::npos) << r.reason;  // not on Hopper
          continue;
        }
        EXPECT_EQ(r.status, Status::ok) << r.problem.describe() << " " << to_string(s) << ": " << r.reason;
        ASSERT_TRUE(r.errors && r.errors_vs_unquantized) << r.problem.describe();
        EXPECT_EQ(r.errors_vs_unquantized->rows_checked, r.errors->rows_checked);
      }
    }
}

TEST(GpuFp8Sweep, BlockDescalesPassAtHd128And256AndAreRefusedAtHd64) {
  std::string why;
  auto ex = make_cuda_executor(0, &why);
  if (!ex) GTEST_SKIP() << "no CUDA executor: " << why;
  if (!Registry::instance().find("fa3.e4m3.hd128.128x128.w12.s2")) GTEST_SKIP() << "fa3 e4m3 not built";
  for (bool hadamard : {false, true}) {
    int passed = 0;
    for (const Result& r : sweep(Fp8Scaling::block, hadamard, *ex)) {
      if (r.status == Status::unsupported && r.reason.find("sm_90") != std::string::npos) continue;  // not Hopper
      if (r.problem.head_dim == 64) {
        EXPECT_EQ(r.status, Status::unsupported) << r.problem.describe();
        EXPECT_NE(r.reason.find("descale blocks"), std::string::npos) << r.reason;
        continue;
      }
      EXPECT_EQ(r.status, Status::ok) << r.problem.describe() << ": " << r.reason;
      ASSERT_TRUE(r.errors && r.errors_vs_unquantized) << r.problem.describe();
      passed += r.status == Status::ok;
    }
    EXPECT_GT(passed, 0);
  }
}

}  // namespace
}  // namespace fa
