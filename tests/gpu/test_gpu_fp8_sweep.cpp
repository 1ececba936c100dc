// fa3's e4m3 forward through the sweep on the GPU: every scaling mode it takes
// passes the FP8 rule at ragged, causal and GQA shapes and reports both error
// figures; block descales too at head dims 128 and 256, and are an `unsupported`
// row at 64 (256-key blocks). Skips without a device or without the fa3 family.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fp8_sweep_rows.h"
#include "measure/executor.h"
#include "registry/kernel.h"

namespace fa {
namespace {

std::vector<Result> sweep(Fp8Scaling scaling, bool hadamard, Executor& ex) {
  return test::fp8_sweep_rows("fa3.e4m3.*", "1,257,1000", "64,128,256", scaling, hadamard, 21, ex);
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
