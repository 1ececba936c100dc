// The ring's host parts (kernels/ring/): the zigzag layout and step schedule, the
// LSE merge formula, the per-step plan the driver enqueues (replayed here on the
// host against one softmax), and NCCL's run-time loader. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "ring/lse_merge_math.h"
#include "ring/nccl_loader.h"
#include "ring/ring_plan.h"
#include "ring/zigzag.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
// The loader's own declarations of NCCL's types hold NCCL's ABI.
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
        if (c.causal) {
          ASSERT_TRUE(c.q_begin == c.kv_begin && c.q_rows == c.kv_rows && owner == g);
        }
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

// ---- the driver's plan, replayed on the host --------------------------------

// Tensors [batch, rows, heads, d], float.
struct Dims {
  int batch, heads, heads_kv, d;
};
size_t at(const Dims& m, int64_t rows, int heads, int b, int64_t row, int h) {
  return size_t(((b * rows + row) * heads + h) * m.d);
}

// What the GPUs hold: per GPU, Q, the caller's K/V and two ring buffers.
struct ReplayGpu {
  std::vector<float> q, k, v, ring_k[2], ring_v[2];
  std::vector<float> o_part, lse_part, o_acc, lse_acc, o, lse;
};

// The whole ring, as ring_forward.cu enqueues it from plan_step: every GPU's
// attention (double precision, the call's mask) and merge (merge_weights, float)
// for step s, then every GPU's transfer of step s (the sender's read buffer into
// the receiver's recv buffer). Returns the outputs gathered into whole-sequence
// order: O [batch, L, heads, d], LSE [batch, heads, L].
void replay(const Zigzag& z, bool causal, const Dims& m, const std::vector<float>& q, const std::vector<float>& k,
            const std::vector<float>& v, bool skip_last, std::vector<float>* o_out, std::vector<float>* lse_out) {
  const int n = z.gpus;
  const int64_t rows = z.rows_per_gpu(), len = z.seqlen();
  std::vector<ReplayGpu> gpus(static_cast<size_t>(n));
  for (int g = 0; g < n; ++g) {
    ReplayGpu& x = gpus[size_t(g)];
    x.q.resize(size_t(m.batch * rows * m.heads * m.d));
    x.k.resize(size_t(m.batch * rows * m.heads_kv * m.d));
    x.v.resize(x.k.size());
    for (int b = 0; b < m.batch; ++b)
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t gr = z.global_row(g, i);
        for (int h = 0; h < m.heads; ++h)
          for (int c = 0; c < m.d; ++c) x.q[at(m, rows, m.heads, b, i, h) + c] = q[at(m, len, m.heads, b, gr, h) + c];
        for (int h = 0; h < m.heads_kv; ++h)
          for (int c = 0; c < m.d; ++c) {
            x.k[at(m, rows, m.heads_kv, b, i, h) + c] = k[at(m, len, m.heads_kv, b, gr, h) + c];
            x.v[at(m, rows, m.heads_kv, b, i, h) + c] = v[at(m, len, m.heads_kv, b, gr, h) + c];
          }
      }
    for (auto* t : {&x.ring_k[0], &x.ring_k[1], &x.ring_v[0], &x.ring_v[1]}) t->assign(x.k.size(), NAN);
    x.o_part.assign(x.q.size(), NAN);
    x.o_acc.assign(x.q.size(), NAN);  // as cudaMalloc leaves them: unread until written
    x.o.assign(x.q.size(), NAN);
    x.lse_part.assign(size_t(m.batch * m.heads * rows), NAN);
    x.lse_acc.assign(x.lse_part.size(), NAN);
    x.lse.assign(x.lse_part.size(), NAN);
  }
  const double scale = 1.0 / std::sqrt(double(m.d));
  for (int s = 0; s < n; ++s) {
    std::vector<StepPlan> plans;
    for (int g = 0; g < n; ++g) plans.push_back(plan_step(z, causal, g, s, skip_last && s == n - 1));
    for (int g = 0; g < n; ++g) {
      ReplayGpu& x = gpus[size_t(g)];
      const StepPlan& p = plans[size_t(g)];
      ASSERT_LE(p.calls.size(), 1u);
      ASSERT_TRUE(p.recv < 0 || p.recv != p.read) << "a transfer would overwrite the K/V its step reads";
      const std::vector<float>& kk = p.read == kKvInput ? x.k : x.ring_k[p.read];
      const std::vector<float>& vv = p.read == kKvInput ? x.v : x.ring_v[p.read];
      for (const StepCall& c : p.calls)
        for (int b = 0; b < m.batch; ++b)
          for (int h = 0; h < m.heads; ++h)
            for (int64_t i = 0; i < c.q_rows; ++i) {
              const int hk = h / (m.heads / m.heads_kv);
              const int64_t seen = c.causal ? i + 1 : c.kv_rows;
              std::vector<double> sc(static_cast<size_t>(seen));
              double mx = -INFINITY;
              for (int64_t j = 0; j < seen; ++j) {
                double acc = 0;
                for (int e = 0; e < m.d; ++e)
                  acc += double(x.q[at(m, rows, m.heads, b, c.q_begin + i, h) + e]) *
                         kk[at(m, rows, m.heads_kv, b, c.kv_begin + j, hk) + e];
                sc[size_t(j)] = acc * scale;
                mx = std::max(mx, sc[size_t(j)]);
              }
              double l = 0;
              for (double& e : sc) l += (e = std::exp(e - mx));
              for (int e = 0; e < m.d; ++e) {
                double acc = 0;
                for (int64_t j = 0; j < seen; ++j)
                  acc += sc[size_t(j)] / l * vv[at(m, rows, m.heads_kv, b, c.kv_begin + j, hk) + e];
                x.o_part[at(m, rows, m.heads, b, c.q_begin + i, h) + e] = float(acc);
              }
              x.lse_part[size_t((int64_t(b) * m.heads + h) * c.q_rows + i)] = float(mx + std::log(l));
            }
      // The merge kernel, row by row.
      for (int b = 0; b < m.batch; ++b)
        for (int64_t row = p.merge_begin; row < p.merge_begin + p.merge_rows; ++row)
          for (int h = 0; h < m.heads; ++h) {
            const size_t lo = size_t((int64_t(b) * m.heads + h) * rows + row);
            const bool has_part = row >= p.part_begin && row < p.part_begin + p.part_rows;
            const float acc_lse = p.first ? -INFINITY : x.lse_acc[lo];
            const float part_lse =
                has_part ? x.lse_part[size_t((int64_t(b) * m.heads + h) * p.part_rows + (row - p.part_begin))]
                         : -INFINITY;
            const MergeWeights w = merge_weights(acc_lse, part_lse);
            for (int e = 0; e < m.d; ++e) {
              const size_t oo = at(m, rows, m.heads, b, row, h) + e;
              const float acc = p.first ? 0.f : x.o_acc[oo];
              const float val = has_part ? w.w_a * acc + w.w_b * x.o_part[oo] : acc;
              (p.last ? x.o : x.o_acc)[oo] = val;
            }
            (p.last ? x.lse : x.lse_acc)[lo] = has_part ? w.lse : acc_lse;
          }
    }
    // The transfers of step s: GPU g receives what g - 1 read.
    std::vector<ReplayGpu> before = gpus;
    for (int g = 0; g < n; ++g) {
      const StepPlan& p = plans[size_t(g)];
      if (p.recv < 0) continue;
      const ReplayGpu& from = before[size_t((g + n - 1) % n)];
      const int sent = plans[size_t((g + n - 1) % n)].read;
      gpus[size_t(g)].ring_k[p.recv] = sent == kKvInput ? from.k : from.ring_k[sent];
      gpus[size_t(g)].ring_v[p.recv] = sent == kKvInput ? from.v : from.ring_v[sent];
    }
  }
  o_out->assign(q.size(), NAN);
  lse_out->assign(size_t(m.batch * m.heads * len), NAN);
  for (int g = 0; g < n; ++g)
    for (int b = 0; b < m.batch; ++b)
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t gr = z.global_row(g, i);
        for (int h = 0; h < m.heads; ++h) {
          for (int e = 0; e < m.d; ++e)
            (*o_out)[at(m, len, m.heads, b, gr, h) + e] = gpus[size_t(g)].o[at(m, rows, m.heads, b, i, h) + e];
          (*lse_out)[size_t((int64_t(b) * m.heads + h) * len + gr)] =
              gpus[size_t(g)].lse[size_t((int64_t(b) * m.heads + h) * rows + i)];
        }
      }
}

// Largest |ring - softmax| over O and LSE of the whole sequence (NaN: unwritten).
double replay_error(int n, int64_t chunk, bool causal, bool skip_last) {
  const Zigzag z{n, chunk};
  const Dims m{2, 4, 2, 4};
  const int64_t len = z.seqlen();
  std::mt19937_64 rng(uint64_t(n * 100 + chunk * 10 + causal));
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> q(size_t(m.batch * len * m.heads * m.d)), k(size_t(m.batch * len * m.heads_kv * m.d)), v(k.size());
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = nd(rng);
  std::vector<float> o, lse;
  replay(z, causal, m, q, k, v, skip_last, &o, &lse);
  if (o.empty()) return INFINITY;  // the replay stopped at a failed assertion
  double err = 0;
  for (int b = 0; b < m.batch; ++b)
    for (int h = 0; h < m.heads; ++h)
      for (int64_t i = 0; i < len; ++i) {
        std::vector<double> sc, vals;
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < (causal ? i + 1 : len); ++j) keys.push_back(j);
        std::vector<double> s(static_cast<size_t>(len)), vv(static_cast<size_t>(len) * m.d);
        const int hk = h / (m.heads / m.heads_kv);
        for (int64_t j : keys) {
          double acc = 0;
          for (int e = 0; e < m.d; ++e) acc += double(q[at(m, len, m.heads, b, i, h) + e]) * k[at(m, len, m.heads_kv, b, j, hk) + e];
          s[size_t(j)] = acc / std::sqrt(double(m.d));
          for (int e = 0; e < m.d; ++e) vv[size_t(j) * m.d + e] = v[at(m, len, m.heads_kv, b, j, hk) + e];
        }
        std::vector<int> ki(keys.begin(), keys.end());
        std::vector<double> ref;
        double ref_lse = 0;
        direct(s, vv, m.d, ki, &ref, &ref_lse);
        const double got_lse = lse[size_t((int64_t(b) * m.heads + h) * len + i)];
        err = std::max(err, std::isnan(got_lse) ? INFINITY : std::fabs(got_lse - ref_lse));
        for (int e = 0; e < m.d; ++e) {
          const double got = o[at(m, len, m.heads, b, i, h) + e];
          err = std::max(err, std::isnan(got) ? INFINITY : std::fabs(got - ref[size_t(e)]));
        }
      }
  return err;
}

TEST(RingReplay, ThePlanComputesOneSoftmax) {
  for (int n = 1; n <= 5; ++n)
    for (int64_t chunk : {1, 3})
      for (bool causal : {false, true})
        EXPECT_LT(replay_error(n, chunk, causal, false), 2e-5)
            << "gpus " << n << " chunk " << chunk << (causal ? " causal" : "");
}

TEST(RingReplay, SkippingTheLastStepIsCaught) {
  for (int n = 2; n <= 4; ++n)
    for (bool causal : {false, true}) EXPECT_GT(replay_error(n, 3, causal, true), 1e-2) << "gpus " << n;
}

TEST(RingPlan, BuffersAlternateAndTheLastStepWritesEveryRow) {
  const Zigzag z{4, 8};
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(plan_step(z, true, g, 0).read, kKvInput);
    EXPECT_EQ(plan_step(z, true, g, 0).recv, 0);
    EXPECT_EQ(plan_step(z, true, g, 1).read, 0);
    EXPECT_EQ(plan_step(z, true, g, 1).recv, 1);
    EXPECT_EQ(plan_step(z, true, g, 2).read, 1);
    EXPECT_EQ(plan_step(z, true, g, 2).recv, 0);  // the buffer step 1 read
    const StepPlan last = plan_step(z, true, g, 3);
    EXPECT_EQ(last.recv, -1);
    EXPECT_TRUE(last.last);
    EXPECT_EQ(last.merge_begin, 0);
    EXPECT_EQ(last.merge_rows, z.rows_per_gpu());
    EXPECT_TRUE(plan_step(z, true, g, 0).first);
    EXPECT_EQ(plan_step(z, true, g, 0).merge_rows, z.rows_per_gpu());  // step 0 fills every row
  }
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
