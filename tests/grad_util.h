// What the backward tests share: a problem's inputs with dO, the O and LSE a
// backward kernel is given (from the float64 forward; O rounded to the dtype),
// the reference gradients, and a full-layout copy of full reference gradients.
#pragma once
#include <vector>

#include "check/inputs.h"
#include "core/tensors.h"
#include "core/types.h"
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

}  // namespace fa::test
