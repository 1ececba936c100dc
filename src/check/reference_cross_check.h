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

// The two are float64 with other summation orders: they agree to ~1e-15
// relative; 1e-12 leaves room for long rows and still catches any wrong term.
constexpr double kReferenceAgreement = 1e-12;

struct ReferenceCrossCheck {
  int64_t rows = 0;           // query rows compared
  double o_max_rel = 0;       // max |gpu - eigen| / (|eigen| + 1e-3) over O (error_accumulator.h)
  double lse_max_rel = 0;     // the same over the LSE of rows that see a key
  int64_t lse_mismatches = 0; // rows where one says -inf (sees no key) and the other not, or non-finite values
  bool passes() const {
    return o_max_rel <= kReferenceAgreement && lse_max_rel <= kReferenceAgreement && lse_mismatches == 0;
  }
  std::string describe() const;  // "64 rows: O max rel 3.1e-16, LSE max rel 1.2e-16, 0 LSE mismatches"
};

// `device` holds `in` as the problem's dtype (Executor::prepare); rows as the
// references take them (empty: every row). `gpu` may plant a fault.
ReferenceCrossCheck cross_check_reference(const AttnProblem&, const HostInputs& in, const DeviceInputs& device,
                                          const std::vector<int64_t>& rows, const GpuReferenceOptions& gpu = {});

// The gradients: dQ on the rows, dK and dV on the columns, both references on
// the same inputs, dO included. Relative error as above; kReferenceAgreement too.
struct GradCrossCheck {
  int64_t rows = 0, cols = 0;  // query rows and key columns compared
  double dq_max_rel = 0, dk_max_rel = 0, dv_max_rel = 0;
  int64_t nonfinite = 0;       // non-finite GPU values
  bool passes() const {
    return dq_max_rel <= kReferenceAgreement && dk_max_rel <= kReferenceAgreement &&
           dv_max_rel <= kReferenceAgreement && nonfinite == 0;
  }
  std::string describe() const;  // "64 rows, 64 columns: dQ max rel 2e-16, dK 3e-16, dV 1e-16, 0 non-finite"
};

// `device` holds `in` (dO included) as the problem's dtype; rows and columns as
// the references take them (empty: every one). `gpu` may plant a fault.
GradCrossCheck cross_check_gradients(const AttnProblem&, const HostInputs& in, const DeviceInputs& device,
                                     const std::vector<int64_t>& rows, const std::vector<int64_t>& cols,
                                     const GpuReferenceOptions& gpu = {});

}  // namespace fa
