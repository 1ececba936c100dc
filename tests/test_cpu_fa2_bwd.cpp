// cpu.fa2's backward against the float64 reference gradients and the gradient
// tolerance rule over tiles and ragged / causal / GQA shapes, its byte count
// against traffic_model_bwd, and its planted faults against the rule.
#include <gtest/gtest.h>

#include <cmath>

#include "check/grad_metrics.h"
#include "common/problem_params.h"
#include "core/errors.h"
#include "cpu/fa2_bwd.h"
#include "grad_util.h"
#include "measure/traffic_bwd.h"

namespace fa {
namespace {

using test::backward_case;
using test::BackwardCase;
using test::shape;
using test::run_bwd;
using test::BwdRun;

GradErrors judge(const BackwardCase& c, const HostGrads& g) {
  GradErrors e = compare_grads(c.p, g, c.ref);
  set_grad_tolerances(e, c.p, c.in, c.ref, 2);
  return e;
}

const auto& kShapes = test::kCpuShapes;
const auto& kTiles = test::kCpuTiles;

std::string describe(const AttnProblem& p, const Tile& t) { return p.describe() + " tile " + t.str(); }

TEST(CpuFa2Backward, PassesTheGradientRule) {
  for (DType dt : {DType::f32, DType::bf16}) {
    for (AttnProblem p : kShapes) {
      p.dtype = dt;
      const BackwardCase c = backward_case(p, 3);
      for (const Tile& t : kTiles) {
        const GradErrors e = judge(c, run_bwd(c, t, 2).grads);
        EXPECT_TRUE(e.passes()) << describe(p, t) << ": dq " << e.dq.max_abs << "/" << e.dq.tolerance
                                << " dk " << e.dk.max_abs << "/" << e.dk.tolerance << " dv "
                                << e.dv.max_abs << "/" << e.dv.tolerance;
        // In fp32 (O not rounded to a narrow dtype) float32 arithmetic keeps it close.
        if (dt == DType::f32) EXPECT_LE(e.dq.rel_l2 + e.dk.rel_l2 + e.dv.rel_l2, 1e-5) << describe(p, t);
      }
    }
  }
}

TEST(CpuFa2Backward, SurvivesAdversarialScores) {
  const AttnProblem p = shape(1, 2, 1, 96, 200, 32, true, DType::bf16);
  const BackwardCase c = backward_case(p, 11, Distribution::adversarial);
  for (const Tile& t : {Tile{64, 64, 0, 0}, Tile{16, 128, 0, 0}}) {
    const GradErrors e = judge(c, run_bwd(c, t, 2).grads);
    EXPECT_TRUE(e.passes()) << describe(p, t);
  }
}

TEST(CpuFa2Backward, CountedBytesEqualTheTrafficModel) {
  for (DType dt : {DType::f32, DType::bf16}) {
    for (AttnProblem p : kShapes) {
      p.dtype = dt;
      const BackwardCase c = backward_case(p, 5, Distribution::uniform);
      for (const Tile& t : kTiles) {
        const BwdRun r = run_bwd(c, t, 2);
        const Traffic model = *traffic_model_bwd(Family::fa2, p, t);
        EXPECT_EQ(r.ctx.counted_read_bytes, model.read_bytes) << describe(p, t);
        EXPECT_EQ(r.ctx.counted_write_bytes, model.write_bytes) << describe(p, t);
      }
    }
  }
}

TEST(CpuFa2Backward, ResultDoesNotDependOnThreadCount) {
  const BackwardCase c = backward_case(shape(2, 4, 2, 90, 70, 16, true), 9);
  for (const Tile& t : {Tile{16, 16, 0, 0}, Tile{32, 8, 0, 0}}) {
    const BwdRun one = run_bwd(c, t, 1), four = run_bwd(c, t, 4);
    EXPECT_EQ(one.grads.dq, four.grads.dq) << t.str();  // bitwise: dQ sums in K/V block order
    EXPECT_EQ(one.grads.dk, four.grads.dk) << t.str();
    EXPECT_EQ(one.grads.dv, four.grads.dv) << t.str();
    EXPECT_EQ(one.ctx.counted_read_bytes, four.ctx.counted_read_bytes);
  }
}

// The shapes a self-test plants the faults on: each fault fails the rule on at
// least one of them (GQA for the group sum, causal with blocks on the diagonal
// for the mask, several K/V blocks per Q block for the dQ accumulation).
const AttnProblem kFaultShapes[] = {
    shape(1, 4, 2, 64, 80, 32, true, DType::bf16),
    shape(1, 2, 2, 100, 100, 32, false, DType::bf16),
};
const Tile kFaultTile{32, 32, 0, 0};

TEST(CpuFa2Backward, EveryPlantedFaultFailsTheRule) {
  std::vector<BackwardCase> cases;
  for (const AttnProblem& p : kFaultShapes) cases.push_back(backward_case(p, 21));
  for (const BackwardCase& c : cases) EXPECT_TRUE(judge(c, run_bwd(c, kFaultTile, 2).grads).passes());
  for (CpuBwdFault f : planted_cpu_bwd_faults()) {
    bool caught = false;
    for (const BackwardCase& c : cases) caught |= !judge(c, run_bwd(c, kFaultTile, 2, f).grads).passes();
    EXPECT_TRUE(caught) << to_string(f) << " passes every fault shape";
  }
}

TEST(CpuFa2Backward, WorkspaceAndBadParams) {
  const AttnProblem p = shape(2, 4, 2, 10, 12, 8, false);
  EXPECT_EQ(cpu_fa2_bwd_workspace_bytes(p), 2LL * 4 * 10 * (4 + 4 * 8));  // D and the accumulator
  const BackwardCase c = backward_case(p, 1);
  std::vector<float> dq(c.in.q.size()), dk(c.in.k.size()), dv(c.in.v.size());
  std::vector<float> ws(size_t(cpu_fa2_bwd_workspace_bytes(p) / 4));
  std::vector<float> o = c.forward.o, lse = c.forward.lse;
  AttnParams a = make_params(p, ElemType::f32);
  a.q = c.in.q.data(), a.k = c.in.k.data(), a.v = c.in.v.data(), a.o = o.data(), a.lse = lse.data();
  a.dq = dq.data(), a.dk = dk.data(), a.dv = dv.data();
  a.workspace = ws.data(), a.workspace_bytes = cpu_fa2_bwd_workspace_bytes(p);
  RunContext ctx;
  EXPECT_THROW(cpu_fa2_backward(a, {8, 8, 0, 0}, ctx), KernelError);  // no dO
  a.dout = c.in.dout.data();
  a.workspace_bytes -= 4;
  EXPECT_THROW(cpu_fa2_backward(a, {8, 8, 0, 0}, ctx), KernelError);  // workspace too small
  a.workspace_bytes += 4;
  EXPECT_THROW(cpu_fa2_backward(a, {0, 8, 0, 0}, ctx), KernelError);
  a.dtype = ElemType::bf16;
  EXPECT_THROW(cpu_fa2_backward(a, {8, 8, 0, 0}, ctx), KernelError);
  a.dtype = ElemType::f32;
  EXPECT_NO_THROW(cpu_fa2_backward(a, {8, 8, 0, 0}, ctx));
}

}  // namespace
}  // namespace fa
