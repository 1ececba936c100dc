// The ring's host parts (kernels/ring/): the zigzag layout and step schedule, the
// LSE merge formula, and NCCL's run-time loader. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "ring/lse_merge_math.h"
#include "ring/nccl_loader.h"
#include "ring/zigzag.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
// The loader's own declarations of NCCL's types hold NCCL's ABI.
static_assert(sizeof(fa::ring::NcclUniqueId) == sizeof(ncclUniqueId));
static_assert(fa::ring::kNcclUint8 == int(ncclUint8));
static_assert(fa::ring::kNcclSuccess == int(ncclSuccess));
static_assert(sizeof(fa::ring::NcclResult) == sizeof(ncclResult_t));
#endif

namespace fa::ring {
namespace {

TEST(RingZigzag, PlacesEveryRowOnceAndBack) {
  for (int n = 1; n <= 8; ++n) {
    const Zigzag z{n, 3};
    std::vector<int> seen(size_t(z.seqlen()), 0);
    for (int g = 0; g < n; ++g)
      for (int64_t i = 0; i < z.rows_per_gpu(); ++i) {
        const int64_t row = z.global_row(g, i);
        ASSERT_GE(row, 0);
        ASSERT_LT(row, z.seqlen());
        ++seen[size_t(row)];
        const Zigzag::Place p = z.place(row);
        EXPECT_EQ(p.gpu, g);
        EXPECT_EQ(p.local_row, i);
      }
    for (int c : seen) EXPECT_EQ(c, 1);
    // GPU r holds chunks r and 2N-1-r, the early one first.
    for (int g = 0; g < n; ++g) {
      EXPECT_EQ(z.chunk_of(g, 0), g);
      EXPECT_EQ(z.chunk_of(g, 1), 2 * n - 1 - g);
    }
  }
}

TEST(RingZigzag, KvOwnerWalksTheRingBackwards) {
  const Zigzag z{4, 2};
  for (int g = 0; g < 4; ++g) {
    std::vector<int> owners;
    for (int s = 0; s < 4; ++s) owners.push_back(z.kv_owner(g, s));
    EXPECT_EQ(owners[0], g);
    EXPECT_EQ(owners[1], (g + 3) % 4);  // received from r - 1
    std::sort(owners.begin(), owners.end());
    EXPECT_EQ(owners, (std::vector<int>{0, 1, 2, 3}));  // every shard once
  }
}

TEST(RingZigzag, PairKinds) {
  EXPECT_EQ(pair_kind(3, 1, true), PairKind::full);
  EXPECT_EQ(pair_kind(2, 2, true), PairKind::diagonal);
  EXPECT_EQ(pair_kind(1, 3, true), PairKind::skipped);
  EXPECT_EQ(pair_kind(1, 3, false), PairKind::full);
  EXPECT_EQ(pair_kind(2, 2, false), PairKind::full);
}

// Token by token: every (query, key) pair the mask shows is computed exactly once
// over all GPUs and steps, and no masked pair is. A causal call is one on the
// same rows of query and key (bottom-right alignment equals top-left there).
void expect_exact_cover(int n, int64_t chunk, bool causal) {
  SCOPED_TRACE("gpus " + std::to_string(n) + " chunk " + std::to_string(chunk) + (causal ? " causal" : ""));
  const Zigzag z{n, chunk};
  const int64_t len = z.seqlen();
  std::vector<int> count(size_t(len * len), 0);
  for (int g = 0; g < n; ++g)
    for (int s = 0; s < n; ++s) {
      const int owner = z.kv_owner(g, s);
      for (const StepCall& c : step_calls(z, causal, g, s)) {
        ASSERT_GE(c.q_begin, 0);
        ASSERT_LE(c.q_begin + c.q_rows, z.rows_per_gpu());
        ASSERT_GE(c.kv_begin, 0);
        ASSERT_LE(c.kv_begin + c.kv_rows, z.rows_per_gpu());
        if (c.causal) ASSERT_TRUE(c.q_begin == c.kv_begin && c.q_rows == c.kv_rows && owner == g);
        for (int64_t i = 0; i < c.q_rows; ++i)
          for (int64_t j = 0; j < c.kv_rows; ++j) {
            if (c.causal && j > i) continue;
            const int64_t qi = z.global_row(g, c.q_begin + i), kj = z.global_row(owner, c.kv_begin + j);
            ++count[size_t(qi * len + kj)];
          }
      }
    }
  for (int64_t i = 0; i < len; ++i)
    for (int64_t j = 0; j < len; ++j) {
      const int want = (!causal || j <= i) ? 1 : 0;
      ASSERT_EQ(count[size_t(i * len + j)], want) << "query " << i << ", key " << j;
    }
}

TEST(RingSchedule, CoversEveryVisiblePairExactlyOnce) {
  for (int n = 1; n <= 6; ++n)
    for (int64_t chunk : {1, 3})
      for (bool causal : {false, true}) expect_exact_cover(n, chunk, causal);
}

// At chunk granularity: the calls' pairs have the kind pair_kind gives, and the
// masked pairs are never computed.
TEST(RingSchedule, CallsMatchPairKinds) {
  for (int n = 1; n <= 8; ++n) {
    const Zigzag z{n, 4};
    for (int g = 0; g < n; ++g)
      for (int s = 0; s < n; ++s) {
        const int owner = z.kv_owner(g, s);
        for (int qh = 0; qh < 2; ++qh)
          for (int kh = 0; kh < 2; ++kh) {
            const PairKind want = pair_kind(z.chunk_of(g, qh), z.chunk_of(owner, kh), true);
            PairKind got = PairKind::skipped;
            for (const StepCall& c : step_calls(z, true, g, s)) {
              const bool q_in = c.q_begin <= qh * z.chunk && qh * z.chunk + z.chunk <= c.q_begin + c.q_rows;
              const bool k_in = c.kv_begin <= kh * z.chunk && kh * z.chunk + z.chunk <= c.kv_begin + c.kv_rows;
              if (!q_in || !k_in) continue;
              got = !c.causal || kh < qh ? PairKind::full : kh == qh ? PairKind::diagonal : PairKind::skipped;
            }
            EXPECT_EQ(got, want) << "gpus " << n << " gpu " << g << " step " << s << " halves " << qh << kh;
          }
      }
  }
}

// Causal zigzag: at every step every GPU computes the same number of visible
// pairs (2 * chunk^2, counting a diagonal chunk pair as half), so none waits.
TEST(RingSchedule, CausalWorkIsBalancedAtEveryStep) {
  for (int n = 1; n <= 8; ++n) {
    const Zigzag z{n, 64};
    for (int s = 0; s < n; ++s)
      for (int g = 0; g < n; ++g) {
        double pairs = 0;
        for (const StepCall& c : step_calls(z, true, g, s))
          pairs += c.causal ? double(c.q_rows) * (c.q_rows + 1) / 2 : double(c.q_rows) * c.kv_rows;
        // The causal call's triangles hold their diagonals: chunk extra pairs.
        const double expected = 2.0 * z.chunk * z.chunk + (s == 0 ? double(z.chunk) : 0.0);
        EXPECT_EQ(pairs, expected) << "gpus " << n << " step " << s << " gpu " << g;
      }
  }
}

// Softmax of one row over keys `keys` in double: O and LSE.
void direct(const std::vector<double>& s, const std::vector<double>& v, int d, const std::vector<int>& keys,
            std::vector<double>* o, double* lse) {
  o->assign(size_t(d), 0.0);
  if (keys.empty()) {
    *lse = -INFINITY;
    return;
  }
  double m = -INFINITY;
  for (int j : keys) m = std::max(m, s[size_t(j)]);
  double l = 0;
  for (int j : keys) l += std::exp(s[size_t(j)] - m);
  for (int j : keys)
    for (int c = 0; c < d; ++c) (*o)[size_t(c)] += std::exp(s[size_t(j)] - m) / l * v[size_t(j) * d + c];
  *lse = m + std::log(l);
}

// The running pair a ring step keeps, folded with merge_weights as the kernel does.
struct Running {
  std::vector<float> o;
  float lse = -INFINITY;
  void fold(const std::vector<double>& o_part, double lse_part) {
    const MergeWeights w = merge_weights(lse, float(lse_part));
    for (size_t c = 0; c < o.size(); ++c) o[c] = w.w_a * o[c] + w.w_b * float(o_part[c]);
    lse = w.lse;
  }
};

TEST(RingMerge, FoldingPartsEqualsOneSoftmax) {
  std::mt19937_64 rng(20261201);
  std::normal_distribution<double> nd(0.0, 1.0);
  const int d = 8, keys = 40;
  for (int trial = 0; trial < 200; ++trial) {
    // Scores of a few magnitudes: large ones overflow a merge without max subtraction.
    const double mag = trial % 3 == 0 ? 40.0 : trial % 3 == 1 ? 1.0 : 5.0;
    std::vector<double> s(keys), v(size_t(keys) * d);
    for (double& x : s) x = mag * nd(rng);
    for (double& x : v) x = nd(rng);
    // Keys dealt to 1..6 parts, some possibly empty (a step that sees no key: LSE -inf).
    const int parts = 1 + int(rng() % 6);
    std::vector<std::vector<int>> part(static_cast<size_t>(parts));
    for (int j = 0; j < keys; ++j) part[rng() % parts].push_back(j);
    std::vector<int> all(keys);
    for (int j = 0; j < keys; ++j) all[size_t(j)] = j;
    std::vector<double> o_ref;
    double lse_ref = 0;
    direct(s, v, d, all, &o_ref, &lse_ref);

    Running run{std::vector<float>(d, 0.f)};
    for (const auto& p : part) {
      std::vector<double> o;
      double lse = 0;
      direct(s, v, d, p, &o, &lse);
      run.fold(o, lse);
    }
    const double tol = 1e-5 * std::max(1.0, std::fabs(lse_ref));
    EXPECT_NEAR(run.lse, lse_ref, tol) << "trial " << trial;
    for (int c = 0; c < d; ++c) EXPECT_NEAR(run.o[size_t(c)], o_ref[size_t(c)], 1e-5) << "trial " << trial;
  }
}

TEST(RingMerge, RowsThatSeeNoKeyStayEmpty) {
  const MergeWeights none = merge_weights(-INFINITY, -INFINITY);
  EXPECT_TRUE(std::isinf(none.lse) && none.lse < 0);
  EXPECT_EQ(none.w_a, 0.f);
  EXPECT_EQ(none.w_b, 0.f);
  // One empty side: the other passes through unchanged.
  const MergeWeights one = merge_weights(-INFINITY, 3.5f);
  EXPECT_EQ(one.lse, 3.5f);
  EXPECT_EQ(one.w_a, 0.f);
  EXPECT_EQ(one.w_b, 1.f);
  const MergeWeights other = merge_weights(-2.f, -INFINITY);
  EXPECT_EQ(other.lse, -2.f);
  EXPECT_EQ(other.w_a, 1.f);
  // Two equal halves: LSE grows by log 2, each weighs one half.
  const MergeWeights half = merge_weights(1.f, 1.f);
  EXPECT_NEAR(half.lse, 1.0 + std::log(2.0), 1e-6);
  EXPECT_EQ(half.w_a, 0.5f);
}

TEST(RingMerge, AWrongLseSignChangesTheResult) {
  // What the ring's planted fault does (negate the partial's LSE) must move O.
  const MergeWeights right = merge_weights(2.f, 1.f), wrong = merge_weights(2.f, -1.f);
  EXPECT_GT(std::fabs(right.w_b - wrong.w_b), 0.1f);
}

TEST(RingNccl, MissingLibraryIsAClearError) {
  std::string why;
  auto lib = NcclLibrary::open("/nonexistent/folder/libnccl.so.2", &why);
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(why.find("NCCL is not available"), std::string::npos) << why;
  EXPECT_NE(why.find("ring family is unavailable"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/folder/libnccl.so.2"), std::string::npos) << why;
  EXPECT_NE(why.find("LD_LIBRARY_PATH"), std::string::npos) << why;
}

TEST(RingNccl, ALibraryWithoutNcclIsRefusedByName) {
  std::string why;
  auto lib = NcclLibrary::open("libm.so.6", &why);  // present on every glibc system
  ASSERT_EQ(lib, nullptr);
  EXPECT_NE(why.find("has no ncclGetVersion"), std::string::npos) << why;
}

TEST(RingNccl, OpensARealNcclWhereThereIsOne) {
  const char* candidates[] = {"/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda-13.0/lib/libnccl.so.2",
                              "/usr/lib/x86_64-linux-gnu/libnccl.so.2"};
  for (const char* path : candidates) {
    if (!std::filesystem::exists(path)) continue;
    std::string why;
    auto lib = NcclLibrary::open(path, &why);
    ASSERT_NE(lib, nullptr) << why;
    EXPECT_GE(lib->version(), kNcclMinVersion);
    EXPECT_EQ(lib->error("ncclSend", kNcclSuccess), "");
    EXPECT_NE(lib->error("ncclSend", 1).find("ncclSend: "), std::string::npos);
    return;
  }
  GTEST_SKIP() << "no NCCL library on this machine";
}

}  // namespace
}  // namespace fa::ring
