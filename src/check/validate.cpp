#include "check/validate.h"

#include <stdexcept>

#include <fmt/format.h>

#include "check/device_compare.h"
#include "check/grad_metrics.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "check/standard_bwd_gpu.h"
#include "check/standard_gpu.h"

namespace fa {

namespace {

constexpr int kDefaultSampleBlock = 128;

std::string forward_why(const ErrorMetrics& m, const Tolerances& t, uint64_t seed) {
  return fmt::format("O max abs error {:.3g} vs tolerance {:.3g}, LSE max abs error {:.3g} vs {:.3g}, {} "
                     "non-finite values (seed {})",
                     m.o_max_abs, t.tolerance, m.lse_max_abs, t.lse_tolerance, m.nonfinite, seed);
}

std::string grad_why(const GradErrors& g, uint64_t seed) {
  return fmt::format("dQ max abs error {:.3g} vs tolerance {:.3g}, dK {:.3g} vs {:.3g}, dV {:.3g} vs {:.3g}, {} "
                     "non-finite values (seed {})",
                     g.dq.max_abs, g.dq.tolerance, g.dk.max_abs, g.dk.tolerance, g.dv.max_abs, g.dv.tolerance,
                     g.dq.nonfinite + g.dk.nonfinite + g.dv.nonfinite, seed);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

int64_t workspace_of(const KernelVariant& v, const AttnProblem& p) {
  return v.workspace_bytes ? v.workspace_bytes(p) : 0;
}

void run_on(const KernelVariant& v, Executor& ex, RunContext& counted) {
  const AttnParams params = ex.params();
  ex.run_once([&](RunContext& ctx) {
    v.run(params, ctx);
    counted = ctx;
  });
}

// Poison O and LSE, run v once, fetch (to `outputs` too), compare.
Validation validate_forward(const KernelVariant& v, const AttnProblem& p, Executor& ex, const PointCheck& check,
                            uint64_t seed, const std::function<void(const HostOutputs&)>& outputs) {
  Validation val;
  const DType o_dtype = o_dtype_of(v, p);
  ex.set_o_dtype(o_dtype);
  if (o_dtype == DType::e4m3 && !check.e4m3_o_tolerances)
    throw std::logic_error("validate_variant: " + v.name + " writes O in e4m3: the point needs its tolerances");
  val.tolerances = o_dtype == DType::e4m3 ? *check.e4m3_o_tolerances : check.tolerances;
  ex.poison_outputs();
  run_on(v, ex, val.counted);
  val.peak_extra_bytes = ex.peak_extra_bytes();
  if (check.device_ref) {  // compared where both are (the cuda back end)
    const AttnParams a = ex.params();
    val.errors = compare_outputs_gpu(p, DeviceOutputs{a.o, a.lse, p.dtype, p.seqlen_q, check.device_ref->rows_on_device()},
                                     *check.device_ref);
    if (outputs) outputs(ex.fetch_outputs());
  } else {
    const HostOutputs out = ex.fetch_outputs();
    if (outputs) outputs(out);
    val.errors = compare_outputs(p, out, check.ref);
    if (check.unquantized_ref) val.errors_vs_unquantized = compare_outputs(p, out, *check.unquantized_ref);
  }
  val.passed = passes(val.errors, val.tolerances);
  if (!val.passed) val.why = forward_why(val.errors, val.tolerances, seed);
  return val;
}

// What the forward partner left in O and LSE, to tell whether the backward
// changed them: fetched to the host, or (on_device) copied on the device.
class PartnerOutputs {
 public:
  PartnerOutputs(const AttnProblem& p, bool on_device) : p_(p), on_device_(on_device) {}
  // validate_forward's `outputs`: empty on the device, where nothing is fetched.
  std::function<void(const HostOutputs&)> catcher() {
    if (on_device_) return {};
    return [this](const HostOutputs& o) { host_ = o; };
  }
  // After the partner ran: the device copies.
  void keep(const Executor& ex) {
    if (!on_device_) return;
    const AttnParams a = ex.params();
    const size_t o_elems = size_t(p_.batch) * p_.seqlen_q * p_.heads * p_.head_dim;
    o_.emplace(a.o, o_elems * size_t(dtype_bytes(p_.dtype)));
    lse_.emplace(a.lse, size_t(p_.batch) * p_.heads * p_.seqlen_q * sizeof(float));
  }
  bool unchanged(Executor& ex) const {
    if (on_device_) {
      const AttnParams a = ex.params();
      return o_->same_bits(a.o) && lse_->same_bits(a.lse);
    }
    const HostOutputs after = ex.fetch_outputs();
    return same_bits(after.o, host_.o) && same_bits(after.lse, host_.lse);
  }

 private:
  const AttnProblem& p_;
  bool on_device_;
  HostOutputs host_;
  std::optional<DeviceSnapshot> o_, lse_;
};

// The partner as a forward, then the backward on the O and LSE it left.
Validation validate_backward(const KernelVariant& v, const AttnProblem& p, Executor& ex, const PointCheck& check,
                             uint64_t seed, const BackwardCheck& bwd) {
  const bool on_device = check.device_grads.has_value();
  if (!bwd.partner || !bwd.tolerances || (on_device ? !bwd.device || !check.device_ref : !bwd.inputs || !check.grads))
    throw std::logic_error("validate_variant: a backward needs its partner, the inputs, the point's gradient "
                           "tolerances and reference gradients (on the device: the device inputs and references)");
  const KernelVariant& f = *bwd.partner;
  ex.reserve_workspace(workspace_of(f, p));
  PartnerOutputs given(p, on_device);
  const Validation fwd = validate_forward(f, p, ex, check, seed, given.catcher());
  Validation val;
  val.errors = fwd.errors;
  val.tolerances = fwd.tolerances;
  val.partner_counted = fwd.counted;
  val.partner_peak_extra_bytes = fwd.peak_extra_bytes;
  if (!fwd.passed) {
    val.why = fmt::format("forward partner {} failed: {}", f.name, fwd.why);
    return val;
  }

  given.keep(ex);
  ex.reserve_workspace(workspace_of(v, p));
  ex.poison_grads();
  run_on(v, ex, val.counted);
  val.peak_extra_bytes = ex.peak_extra_bytes();
  GradErrors g;
  if (on_device) {
    const AttnParams a = ex.params();
    g = compare_grads_gpu(p, DeviceGradOutputs{a.dq, a.dk, a.dv, p.dtype}, *check.device_grads).errors;
    bwd.tolerances->set(g, p, *bwd.device, *check.device_grads);
  } else {
    g = compare_grads(p, ex.fetch_grads(), *check.grads);
    bwd.tolerances->set(g, p, *bwd.inputs, *check.grads, bwd.threads);
  }
  val.grad_errors = g;
  val.errors.sampled = g.sampled;
  if (!given.unchanged(ex)) {
    val.why = fmt::format("it changed O or LSE, its inputs (seed {})", seed);
    return val;
  }
  val.passed = g.passes();
  if (!val.passed) val.why = grad_why(g, seed);
  return val;
}

}  // namespace

PointCheck check_point(const AttnProblem& p, const HostInputs& inputs, int64_t max_check_rows, int block_m,
                       uint64_t seed, int threads, std::optional<int> grad_block_n, const DeviceInputs* device,
                       const HostInputs* unquantized) {
  if (p.dtype == DType::e4m3 && (device || grad_block_n || !unquantized))
    throw std::logic_error("check_point: an e4m3 point is a forward checked on the host, with its unquantized inputs");
  std::vector<int64_t> rows;  // empty: every row
  if (p.seqlen_q > max_check_rows)
    rows = sample_rows(p, max_check_rows, block_m > 0 ? block_m : kDefaultSampleBlock, seed);
  std::vector<int64_t> cols;  // empty: every column
  if (grad_block_n && p.seqlen_k > max_check_rows)
    cols = sample_cols(p, max_check_rows, *grad_block_n > 0 ? *grad_block_n : kDefaultSampleBlock, seed);
  PointCheck c;
  if (device) {  // everything stays on the device
    if (grad_block_n) {
      if (!device->dout) throw std::logic_error("check_point: a point with gradients needs dO on the device");
      c.device_grads = reference_backward_gpu_on_device(p, *device, std::move(rows), std::move(cols));
      rows = c.device_grads->rows();
    }
    c.device_ref = reference_forward_gpu_on_device(p, *device, std::move(rows));
    c.ref.rows = c.device_ref->rows();
    c.tolerances = tolerances_for(p, standard_errors_gpu(p, *device, *c.device_ref));
    return c;
  }
  if (grad_block_n)
    c.grads = reference_backward(p, inputs, std::move(rows), std::move(cols), threads, nullptr, &c.ref);
  else
    c.ref = reference_forward(p, inputs, rows, threads);
  if (p.dtype == DType::e4m3) c.unquantized_ref = reference_forward(p, *unquantized, c.ref.rows, threads);
  if (p.dtype == DType::e4m3 && inputs.o_scale > 0) {
    c.e4m3_o_tolerances.emplace();
    c.tolerances = tolerances_for(p, inputs, c.ref, &*c.e4m3_o_tolerances);
  } else {
    c.tolerances = tolerances_for(p, inputs, c.ref);
  }
  return c;
}

void GradTolerances::set(GradErrors& g, const AttnProblem& p, const HostInputs& in, const SampledGrads& ref,
                         int threads) {
  if (!computed_) {  // set only once computed: a throw leaves it to the next row
    GradErrors t;
    set_grad_tolerances(t, p, in, ref, threads);
    computed_ = t;
  }
  copy_to(g);
}

void GradTolerances::set(GradErrors& g, const AttnProblem& p, const DeviceInputs& in, const DeviceGrads& ref) {
  if (!computed_) {
    GradErrors t;
    set_grad_tolerances(t, p.dtype, standard_grad_errors_gpu(p, in, ref));
    computed_ = t;
  }
  copy_to(g);
}

void GradTolerances::copy_to(GradErrors& g) const {
  g.dq.tolerance = computed_->dq.tolerance;
  g.dk.tolerance = computed_->dk.tolerance;
  g.dv.tolerance = computed_->dv.tolerance;
}

Validation validate_variant(const KernelVariant& v, const AttnProblem& p, Executor& ex, const PointCheck& check,
                            uint64_t seed, const std::function<void(const HostOutputs&)>& outputs,
                            const BackwardCheck* bwd) {
  if (v.pass == Pass::bwd) {
    if (!bwd) throw std::logic_error("validate_variant: " + v.name + " is a backward: it needs a BackwardCheck");
    return validate_backward(v, p, ex, check, seed, *bwd);
  }
  return validate_forward(v, p, ex, check, seed, outputs);
}

}  // namespace fa
