// `fa-bench sweep --inputs DIR --save-outputs DIR`: the user's own .npy tensors
// in, O and LSE out, through the real binary; checked against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "check/npy.h"
#include "check/user_inputs.h"
#include "process_util.h"
#include "reference/reference.h"

namespace fa {
namespace {

namespace fs = std::filesystem;

std::vector<float> randn(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

TEST(UserInputs, SweepOnNpyTensorsWritesOutputsThatMatchTheReference) {
  auto dir = test::temp_dir("user_inputs");
  const int b = 2, sq = 70, sk = 90, h = 4, hkv = 2, d = 32;
  HostInputs in{randn(size_t(b) * sq * h * d, 1), randn(size_t(b) * sk * hkv * d, 2),
                randn(size_t(b) * sk * hkv * d, 3)};
  fs::create_directories(dir / "in");
  save_npy((dir / "in" / "q.npy").string(), {b, sq, h, d}, in.q);
  save_npy((dir / "in" / "k.npy").string(), {b, sk, hkv, d}, in.k, /*as_f16=*/true);
  save_npy((dir / "in" / "v.npy").string(), {b, sk, hkv, d}, in.v);
  test::ProcResult r = test::run_fa_bench(
      {"sweep", "--backend", "cpu", "--inputs", (dir / "in").string(), "--save-outputs",
       (dir / "out").string(), "--kernels", "cpu.fa2", "--dtype", "fp32", "--causal", "true",
       "--json", (dir / "r.json").string()},
      dir);
  ASSERT_EQ(r.code, 0) << r.err;

  AttnProblem p;
  p.batch = b, p.heads = h, p.heads_kv = hkv, p.seqlen_q = sq, p.seqlen_k = sk, p.head_dim = d;
  p.causal = true;
  p.dtype = DType::f32;
  // K went through float16 on disk: the tool must see exactly what the file holds.
  UserInputs u = load_user_inputs((dir / "in").string());
  EXPECT_EQ(u.seqlen_k, sk);
  EXPECT_EQ(u.heads_kv, hkv);
  ReferenceOutputs ref = reference_forward(p, u.tensors);
  const std::string stem = (dir / "out" / ("cpu.fa2.64x64." + problem_slug(p))).string();
  NpyArray o = load_npy(stem + ".o.npy"), lse = load_npy(stem + ".lse.npy");
  ASSERT_EQ(o.shape, (std::vector<int64_t>{b, sq, h, d}));
  ASSERT_EQ(lse.shape, (std::vector<int64_t>{b, h, sq}));
  double worst = 0;
  for (size_t i = 0; i < o.data.size(); ++i) worst = std::max(worst, std::abs(o.data[i] - ref.o[i]));
  EXPECT_LT(worst, 1e-5);
  for (size_t i = 0; i < lse.data.size(); ++i) {
    if (std::isinf(ref.lse[i])) {
      EXPECT_TRUE(std::isinf(lse.data[i]) && lse.data[i] < 0) << i;  // a row that sees no key
    } else {
      EXPECT_NEAR(lse.data[i], ref.lse[i], 1e-4) << i;
    }
  }
}

TEST(UserInputs, MismatchedShapesAreAUsageErrorAndWriteNothing) {
  auto dir = test::temp_dir("user_inputs_bad");
  fs::create_directories(dir / "in");
  save_npy((dir / "in" / "q.npy").string(), {1, 8, 2, 16}, randn(256, 1));
  save_npy((dir / "in" / "k.npy").string(), {1, 8, 2, 32}, randn(512, 2));  // head_dim differs
  save_npy((dir / "in" / "v.npy").string(), {1, 8, 2, 32}, randn(512, 3));
  test::ProcResult r = test::run_fa_bench(
      {"sweep", "--backend", "cpu", "--inputs", (dir / "in").string(), "--json", (dir / "r.json").string()}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("must agree in batch and head_dim"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "r.json"));
  fs::remove(dir / "in" / "v.npy");
  r = test::run_fa_bench({"sweep", "--backend", "cpu", "--inputs", (dir / "in").string()}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("v.npy: not found"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fa
