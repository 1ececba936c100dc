// cuDNN's e4m3 forward through the sweep on the GPU, beside fa3's: on small
// ragged, causal and GQA shapes every cudnn.e4m3 row passes the FP8 rule's
// e4m3-O form (its tolerance not fa3's on the same point), reports both error
// figures, and per-(batch, head) descales are `unsupported` rows.
// Skips without a device or without the cudnn family.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fp8_sweep_rows.h"
#include "measure/executor.h"
#include "registry/kernel.h"

namespace fa {
namespace {

std::vector<Result> sweep(const std::string& kernels, Fp8Scaling scaling, bool hadamard, Executor& ex) {
  return test::fp8_sweep_rows(kernels, "128,257,1000", "64,128", scaling, hadamard, 23, ex);
}

TEST(GpuCudnnFp8, PassesTheFp8RuleWithOsRoundingBesideFa3) {
  std::string why;
  auto ex = make_cuda_executor(0, &why);
  if (!ex) GTEST_SKIP() << "no CUDA executor: " << why;
  if (!Registry::instance().find("cudnn.e4m3")) GTEST_SKIP() << "cudnn not built";
  for (bool hadamard : {false, true}) {
    const std::vector<Result> rows = sweep("fa3,cudnn", Fp8Scaling::tensor, hadamard, *ex);
    std::map<std::string, double> fa3_tolerance;  // by point
    for (const Result& r : rows)
      if (r.family == Family::fa3 && r.tolerances) fa3_tolerance[r.problem.describe()] = r.tolerances->tolerance;
    int ran = 0;
    for (const Result& r : rows) {
      if (r.family != Family::cudnn) continue;
      // Not Hopper, or a cuDNN too old, is a refusal; any other (cuDNN refusing
      // a shape of this sweep) fails here, so that a run shows it.
      if (r.status == Status::unsupported && (r.reason.find("compute capability") != std::string::npos ||
                                              r.reason.find(" loaded; ") != std::string::npos))
        continue;
      ++ran;
      EXPECT_EQ(r.status, Status::ok) << r.problem.describe() << (hadamard ? " hadamard" : "") << ": " << r.reason;
      ASSERT_TRUE(r.errors && r.errors_vs_unquantized && r.tolerances) << r.problem.describe();
      EXPECT_EQ(r.errors->nonfinite, 0) << r.problem.describe();
      EXPECT_LE(r.errors->o_max_abs, r.tolerances->tolerance) << r.problem.describe();
      // The same point's fa3 row (bf16 O) is held to the standard's other form.
      if (auto it = fa3_tolerance.find(r.problem.describe()); it != fa3_tolerance.end())
        EXPECT_NE(r.tolerances->tolerance, it->second) << r.problem.describe();
    }
    EXPECT_GT(ran, 0) << "no cudnn.e4m3 row ran";
  }
}

TEST(GpuCudnnFp8, PerHeadDescalesAreUnsupportedRows) {
  std::string why;
  auto ex = make_cuda_executor(0, &why);
  if (!ex) GTEST_SKIP() << "no CUDA executor: " << why;
  if (!Registry::instance().find("cudnn.e4m3")) GTEST_SKIP() << "cudnn not built";
  const std::vector<Result> rows = sweep("cudnn.e4m3", Fp8Scaling::head, false, *ex);
  ASSERT_FALSE(rows.empty());
  for (const Result& r : rows) {
    EXPECT_EQ(r.status, Status::unsupported) << r.problem.describe();
    EXPECT_NE(r.reason.find("one descale per tensor"), std::string::npos) << r.reason;
  }
}

}  // namespace
}  // namespace fa
