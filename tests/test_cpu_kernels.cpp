// cpu.standard, cpu.fa1 and cpu.fa2 against the float64 reference over tiles and
// ragged / causal / GQA shapes, and their byte counts against the traffic model.
#include <gtest/gtest.h>

#include <cmath>

#include "check/inputs.h"
#include "common/problem_params.h"
#include "cpu_shapes.h"
#include "core/errors.h"
#include "check/metrics.h"
#include "registry/cpu_kernels.h"
#include "reference/reference.h"

namespace fa {
namespace {

using test::shape;

struct KernelRun {
  HostOutputs out;
  RunContext ctx;
};

// Runs a variant on float32 buffers the way the CPU executor does; O and LSE
// start as NaN so an element the kernel forgets shows up as nonfinite.
KernelRun run_variant(const KernelVariant& v, const AttnProblem& p, const HostInputs& in, int threads) {
  KernelRun r;
  r.out.o.assign(in.q.size(), NAN);
  r.out.lse.assign(size_t(p.batch) * p.heads * p.seqlen_q, NAN);
  std::vector<float> ws(size_t(v.workspace_bytes(p) / 4) + 1, NAN);
  AttnParams a = make_params(p, ElemType::f32);
  a.q = in.q.data(), a.k = in.k.data(), a.v = in.v.data();
  a.o = r.out.o.data(), a.lse = r.out.lse.data();
  a.workspace = ws.data(), a.workspace_bytes = v.workspace_bytes(p);
  r.ctx.threads = threads;
  r.ctx.elem_bytes = dtype_bytes(p.dtype);
  v.run(a, r.ctx);
  return r;
}

const auto& kShapes = test::kCpuShapes;
const auto& kTiles = test::kCpuTiles;

std::vector<KernelVariant> variants() {
  std::vector<KernelVariant> vs{make_cpu_variant(Family::standard, {})};
  for (Family f : {Family::fa1, Family::fa2})
    for (const Tile& t : kTiles) vs.push_back(make_cpu_variant(f, t));
  return vs;
}

TEST(CpuKernels, MatchReferenceInFp32) {
  for (const AttnProblem& p : kShapes) {
    const HostInputs in = generate_inputs(p, Distribution::normal, 3);
    const ReferenceOutputs ref = reference_forward(p, in, {}, 2);
    for (const KernelVariant& v : variants()) {
      const KernelRun r = run_variant(v, p, in, 2);
      const ErrorMetrics m = compare_outputs(p, r.out, ref);
      EXPECT_EQ(m.nonfinite, 0) << v.name << " " << p.describe();
      EXPECT_LE(m.o_max_abs, 1e-5) << v.name << " " << p.describe();
      EXPECT_LE(m.lse_max_abs, 1e-5) << v.name << " " << p.describe();
    }
  }
}

TEST(CpuKernels, SurviveAdversarialScores) {
  // Scores up to ~60 whose maximum arrives in the last block: the online
  // rescale must keep every intermediate finite.
  const AttnProblem p = shape(1, 2, 1, 96, 200, 32, true);
  const HostInputs in = generate_inputs(p, Distribution::adversarial, 11);
  const ReferenceOutputs ref = reference_forward(p, in, {}, 2);
  for (const KernelVariant& v : variants()) {
    const ErrorMetrics m = compare_outputs(p, run_variant(v, p, in, 2).out, ref);
    EXPECT_EQ(m.nonfinite, 0) << v.name;
    EXPECT_LE(m.o_max_abs, 1e-4) << v.name;  // |O| up to ~3, float32 exp of scores ~60
    EXPECT_LE(m.lse_max_abs, 1e-4) << v.name;
  }
}

TEST(CpuKernels, CountedBytesEqualTheTrafficModel) {
  for (DType dt : {DType::f32, DType::bf16}) {
    for (AttnProblem p : kShapes) {
      p.dtype = dt;
      const HostInputs in = generate_inputs(p, Distribution::uniform, 5);
      for (const KernelVariant& v : variants()) {
        const KernelRun r = run_variant(v, p, in, 2);
        const Traffic model = *v.traffic(p);
        EXPECT_EQ(r.ctx.counted_read_bytes, model.read_bytes) << v.name << " " << p.describe();
        EXPECT_EQ(r.ctx.counted_write_bytes, model.write_bytes) << v.name << " " << p.describe();
      }
    }
  }
}

TEST(CpuKernels, ResultDoesNotDependOnThreadCount) {
  const AttnProblem p = shape(2, 3, 3, 90, 70, 16, true);
  const HostInputs in = generate_inputs(p, Distribution::normal, 9);
  for (const KernelVariant& v : variants()) {
    const KernelRun one = run_variant(v, p, in, 1), three = run_variant(v, p, in, 3);
    ASSERT_EQ(one.out.o.size(), three.out.o.size());
    for (size_t i = 0; i < one.out.o.size(); ++i) ASSERT_EQ(one.out.o[i], three.out.o[i]) << v.name;
    EXPECT_EQ(one.ctx.counted_read_bytes, three.ctx.counted_read_bytes) << v.name;
  }
}

TEST(CpuKernels, StandardWorkspaceIsQuadratic) {
  const AttnProblem p = shape(2, 4, 4, 1000, 3000, 64, false);
  EXPECT_EQ(cpu_standard_workspace_bytes(p), 2LL * 2 * 4 * 1000 * 3000 * 4);
  EXPECT_EQ(cpu_fa1_workspace_bytes(p), 2LL * 2 * 4 * 1000 * 4);
  EXPECT_EQ(make_cpu_variant(Family::fa2, {64, 64, 0, 0}).workspace_bytes(p), 0);
}

TEST(CpuKernels, RejectBadInput) {
  EXPECT_THROW(make_cpu_variant(Family::fa3, {64, 64, 0, 0}), UsageError);
  EXPECT_THROW(make_cpu_variant(Family::fa2, {0, 64, 0, 0}), UsageError);
  const AttnProblem p = shape(1, 1, 1, 8, 8, 8, false);
  const HostInputs in = generate_inputs(p, Distribution::normal, 1);
  KernelVariant fa1 = make_cpu_variant(Family::fa1, {4, 4, 0, 0});
  std::vector<float> o(in.q.size()), lse(8);
  AttnParams a = make_params(p, ElemType::f32);
  a.q = in.q.data(), a.k = in.k.data(), a.v = in.v.data(), a.o = o.data(), a.lse = lse.data();
  RunContext ctx;
  EXPECT_THROW(fa1.run(a, ctx), KernelError);  // no workspace for m and l
  a.dtype = ElemType::bf16;
  EXPECT_THROW(make_cpu_variant(Family::fa2, {4, 4, 0, 0}).run(a, ctx), KernelError);
}

}  // namespace
}  // namespace fa
