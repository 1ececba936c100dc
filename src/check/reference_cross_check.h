// The GPU float64 reference (reference/gpu_reference.h) held against the Eigen
// one, the oracle, on the same inputs and rows (and columns, for the
// gradients): what tests/gpu and fa-check's cuda back end run before trusting it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensors.h"
#include "core/types.h"
#include "reference/gpu_reference.h"

namespace fa {

// The two are float64 with other summation orders, so they differ by rounding
// alone, bounded to first order (u = 2^-53):
//   a score's dot product over head_dim: d u tau |q| |k| (Cauchy-Schwarz), which
//   exp turns into that relative error on P; the row sum and P V over the keys:
//   n_k u; times max|V| for O, whose relative figure divides by |O| + 1e-3 (the
//   floor keeps it finite, a small O gets no extra room: the factor 4 covers
//   both references' rounding, and margin). Adversarial scores reach ~60 and
//   earn their larger bound; a wrong term (a mask off by one, a missed key)
//   moves O by 1e-3 or more, far outside it.
double reference_agreement(const AttnProblem&, const HostInputs&);

struct ReferenceCrossCheck {
  int64_t rows = 0;           // query rows compared
  double o_max_rel = 0;       // max |gpu - eigen| / (|eigen| + 1e-3) over O (error_accumulator.h)
  double lse_max_rel = 0;     // the same over the LSE of rows that see a key
  int64_t lse_mismatches = 0; // rows where one says -inf (sees no key) and the other not, or non-finite values
  double agreement = 0;       // reference_agreement of the inputs: the bound both figures must stay within
  bool passes() const { return o_max_rel <= agreement && lse_max_rel <= agreement && lse_mismatches == 0; }
  std::string describe() const;  // "64 rows: O max rel 3.1e-16, LSE max rel 1.2e-16 (bound 2e-12), 0 LSE mismatches"
};

// `device` holds `in` as the problem's dtype (Executor::prepare); rows as the
// references take them (empty: every row). `gpu` may plant a fault.
ReferenceCrossCheck cross_check_reference(const AttnProblem&, const HostInputs& in, const DeviceInputs& device,
                                          const std::vector<int64_t>& rows, const GpuReferenceOptions& gpu = {});

// The gradients' bound, by the same reasoning: dP = dO V^T and D = rowsum(dO o O)
// err by d u |dO| |v|, on top of P's error; dS = P o (dP - D) carries both
// (their product too); dQ = tau dS K, dK = tau dS^T Q and dV = P^T dO sum over
// the keys or over the g n_q query rows that reach a key:
//   4 (d + n_k + g n_q) u (1 + tau max|q| max|k|)(1 + max|dO| max|v|)
//     max(1, max|q|, max|k|, max|dO|)
// with |.| row norms inside the products and magnitudes in the last factor.
double gradient_agreement(const AttnProblem&, const HostInputs&);

// The gradients: dQ on the rows, dK and dV on the columns, both references on
// the same inputs, dO included. Relative error as above, within gradient_agreement.
struct GradCrossCheck {
  int64_t rows = 0, cols = 0;  // query rows and key columns compared
  double dq_max_rel = 0, dk_max_rel = 0, dv_max_rel = 0;
  int64_t nonfinite = 0;       // non-finite GPU values
  double agreement = 0;        // gradient_agreement of the inputs
  bool passes() const {
    return dq_max_rel <= agreement && dk_max_rel <= agreement && dv_max_rel <= agreement && nonfinite == 0;
  }
  std::string describe() const;  // "64 rows, 64 columns: dQ max rel 2e-16, dK 3e-16, dV 1e-16, 0 non-finite"
};

// `device` holds `in` (dO included) as the problem's dtype; rows and columns as
// the references take them (empty: every one). `gpu` may plant a fault.
GradCrossCheck cross_check_gradients(const AttnProblem&, const HostInputs& in, const DeviceInputs& device,
                                     const std::vector<int64_t>& rows, const std::vector<int64_t>& cols,
                                     const GpuReferenceOptions& gpu = {});

}  // namespace fa
