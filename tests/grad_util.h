// What the backward tests share: a problem's inputs with dO, the O and LSE a
// backward kernel is given (from the float64 forward; O rounded to the dtype),
// the reference gradients, and a full-layout copy of full reference gradients.
#pragma once
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "check/inputs.h"
#include "common/problem_params.h"
#include "core/tensors.h"
#include "core/types.h"
#include "cpu/fa2_bwd.h"
#include "cpu_shapes.h"
#include "reference/attention_grad.h"

namespace fa::test {

struct BackwardCase {
  AttnProblem p;
  HostInputs in;        // q, k, v, dout
  HostOutputs forward;  // O (dtype values) and LSE, as a backward kernel takes them
  SampledGrads ref;     // on every row and column unless sampled
};

inline BackwardCase backward_case(const AttnProblem& p, uint64_t seed,
                                  Distribution dist = Distribution::normal,
                                  std::vector<int64_t> rows = {}, std::vector<int64_t> cols = {}) {
  BackwardCase c{p, generate_inputs(p, dist, seed), {}, {}};
  c.in.dout = generate_dout(p, dist, seed);
  c.ref = reference_backward(p, c.in, std::move(rows), std::move(cols), 2, &c.forward);
  round_to_dtype(c.forward.o, p.dtype);
  return c;
}

// Full reference gradients (every row and column) in HostGrads' float layout:
// what a kernel that erred only by rounding to float32 would write.
inline HostGrads as_host_grads(const SampledGrads& g) {
  HostGrads h;
  h.dq.assign(g.dq.begin(), g.dq.end());
  h.dk.assign(g.dk.begin(), g.dk.end());
  h.dv.assign(g.dv.begin(), g.dv.end());
  return h;
}

struct BwdRun {
  HostGrads grads;
  RunContext ctx;
};

// Runs the backward on float32 buffers as the CPU executor would; dQ, dK, dV
// start as NaN so an element the kernel forgets shows up as nonfinite.
inline BwdRun run_bwd(const BackwardCase& c, const Tile& tile, int threads,
               CpuBwdFault fault = CpuBwdFault::none) {
  BwdRun r;
  r.grads.dq.assign(c.in.q.size(), NAN);
  r.grads.dk.assign(c.in.k.size(), NAN);
  r.grads.dv.assign(c.in.v.size(), NAN);
  const int64_t ws_bytes = cpu_fa2_bwd_workspace_bytes(c.p);
  std::vector<float> ws(size_t(ws_bytes / 4) + 1, NAN);
  std::vector<float> o = c.forward.o, lse = c.forward.lse;  // inputs: the kernel must not need to write them
  AttnParams a = make_params(c.p, ElemType::f32);
  a.q = c.in.q.data(), a.k = c.in.k.data(), a.v = c.in.v.data(), a.dout = c.in.dout.data();
  a.o = o.data(), a.lse = lse.data();
  a.dq = r.grads.dq.data(), a.dk = r.grads.dk.data(), a.dv = r.grads.dv.data();
  a.workspace = ws.data(), a.workspace_bytes = ws_bytes;
  r.ctx.threads = threads;
  r.ctx.elem_bytes = dtype_bytes(c.p.dtype);
  cpu_fa2_backward(a, tile, r.ctx, fault);
  EXPECT_EQ(o, c.forward.o);
  return r;
}

}  // namespace fa::test
