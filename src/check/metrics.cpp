// Error metrics against the float64 reference and the tolerance rule
// (docs/MEASUREMENT.md, "The tolerance rule").
#include "check/metrics.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <mutex>

#include "core/e4m3.h"
#include "check/fp8_mma.h"
#include "check/half.h"
#include "core/errors.h"
#include "core/parallel.h"

namespace fa {

namespace {

constexpr double kLseFloor = 1e-3;

void check_sizes(const AttnProblem& p, size_t o, size_t lse, const char* what) {
  const size_t want_o = size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
  const size_t want_lse = size_t(p.batch) * p.heads * p.seqlen_q;
  if (o != want_o || lse != want_lse)
    throw KernelError(fmt::format("{}: O has {} elements and LSE {}, {} wants {} and {}", what, o,
                                  lse, p.describe(), want_o, want_lse));
}

float round_to(float x, DType d) {
  return d == DType::bf16 ? round_bf16(x) : d == DType::f16 ? round_f16(x) : x;
}

struct StandardErrors {
  double o_max_abs = 0, lse_max_abs = 0;
  // e4m3: the same standard in the form of a kernel that rounds the normalized
  // P and writes O in e4m3 (cuDNN's FP8 forward): its O max abs error, and
  // the largest |reference O| (O's rounding floor, e4m3_o_floor).
  double o_max_abs_e4m3_o = 0, ref_o_max = 0;
};

// An e4m3 point's K as the FP8 standard reads it: code values (no descale) per
// (batch, kv head), in fp8_mma_scores' layout.
std::vector<std::vector<float>> fp8_keys(const AttnProblem& p, const E4m3Codes& k8) {
  const int64_t d = p.head_dim, nk = p.seqlen_k, hkv = p.heads_kv;
  std::vector<std::vector<float>> out(size_t(p.batch * hkv));
  parallel_for(int64_t(p.batch) * hkv, resolve_threads(0), [&](int64_t bh, int) {
    const int64_t b = bh / hkv, hk = bh % hkv;
    std::vector<float> values(size_t(nk * d));
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t e = 0; e < d; ++e) values[size_t(j * d + e)] = decode_e4m3(k8.codes[size_t(((b * nk + j) * hkv + hk) * d + e)]);
    out[size_t(bh)] = fp8_keys_blocked(values.data(), nk, int(d), d);
  });
  return out;
}

// A standard implementation in the kernel's precision on the reference's rows:
// S accumulated in float32 and stored in the dtype (as an unfused bf16/fp16
// attention stores it, and as the FlashAttention tests' reference with
// upcast=False does), float32 softmax, P rounded to the dtype, float32 P V,
// O rounded. Our own `standard` GPU kernel is exactly such an implementation,
// so the rule "at most 2x the standard's error" is consistent with it. Like the
// reference it works on chunks of rows as two GEMMs (Eigen, float32 in and out),
// so a sampled check at long seqlen costs about what the reference does.
// e4m3: the scores come from the codes as the FP8 tensor cores add them up
// (check/fp8_mma.h), times the scale and the descales; the rest as described
// in docs/MEASUREMENT.md, "The FP8 tolerance rule", in both of its forms: P
// rounded unnormalized and O in bf16 (fa3), and P rounded normalized and O in
// e4m3 with the inputs' o_scale (cuDNN), from the same scores.
StandardErrors standard_in_precision(const AttnProblem& p, const HostInputs& in,
                                     const ReferenceOutputs& ref) {
  using MapF = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          0, Eigen::OuterStride<>>;
  using ColF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  constexpr int64_t kChunk = 64;
  const int64_t n_rows = int64_t(ref.rows.size()), d = p.head_dim, nq = p.seqlen_q;
  const int64_t nk = p.seqlen_k, group = p.heads / p.heads_kv;
  const int64_t chunks = (n_rows + kChunk - 1) / kChunk;
  const float scale = p.scale();
  const bool fp8 = p.dtype == DType::e4m3;
  const bool e4m3_o = fp8 && in.o_scale > 0;  // the second form needs O's scale (quantize_inputs sets it)
  const DType out_dtype = output_dtype(p.dtype);
  const std::vector<std::vector<float>> fp8_k = fp8 ? fp8_keys(p, in.k8) : std::vector<std::vector<float>>{};
  const int workers = resolve_threads(0);
  std::vector<StandardErrors> per_worker(workers);
  parallel_for(int64_t(p.batch) * p.heads * chunks, workers, [&](int64_t task, int w) {
    const int64_t bh = task / chunks, c0 = (task % chunks) * kChunk;
    const int64_t cn = std::min(kChunk, n_rows - c0);
    const int64_t b = bh / p.heads, h = bh % p.heads, hk = h / group;
    const int64_t n_vis = p.keys_seen(ref.rows[c0 + cn - 1]);  // rows ascend
    const int64_t kv_off = (b * nk * p.heads_kv + hk) * d;
    const MapF k(in.k.data() + kv_off, nk, d, Eigen::OuterStride<>(p.heads_kv * d));
    const MapF v(in.v.data() + kv_off, nk, d, Eigen::OuterStride<>(p.heads_kv * d));
    ColF pt(n_vis, cn);  // S^T, then P^T rounded to the dtype
    ColF pt_norm;        // e4m3: P^T in the normalized form (cuDNN's), from the same scores
    if (e4m3_o) pt_norm.resize(n_vis, cn);
    if (fp8 && n_vis > 0) {
      std::vector<float> q_codes(static_cast<size_t>(cn * d)), dots(static_cast<size_t>(cn * n_vis));
      std::vector<float> k_descale(static_cast<size_t>(n_vis));
      for (int64_t c = 0; c < cn; ++c) {
        const uint8_t* code = in.q8.codes.data() + ((b * nq + ref.rows[c0 + c]) * p.heads + h) * d;
        for (int64_t e = 0; e < d; ++e) q_codes[size_t(c * d + e)] = decode_e4m3(code[e]);
      }
      for (int64_t j = 0; j < n_vis; ++j) k_descale[size_t(j)] = descale_at(in.k8, b, j, hk);
      fp8_mma_scores(q_codes.data(), int(cn), int(d), fp8_k[size_t(b * p.heads_kv + hk)].data(), n_vis, dots.data());
      for (int64_t c = 0; c < cn; ++c) {
        const float row_scale = scale * descale_at(in.q8, b, ref.rows[c0 + c], h);
        for (int64_t j = 0; j < n_vis; ++j) pt(j, c) = dots[size_t(c * n_vis + j)] * (row_scale * k_descale[size_t(j)]);
      }
    } else if (n_vis > 0) {
      ColF qc(d, cn);
      for (int64_t c = 0; c < cn; ++c) {
        const float* q = in.q.data() + ((b * nq + ref.rows[c0 + c]) * p.heads + h) * d;
        for (int64_t e = 0; e < d; ++e) qc(e, c) = q[e];
      }
      pt.noalias() = (k.topRows(n_vis) * qc) * scale;
    }
    StandardErrors& err = per_worker[w];
    for (int64_t c = 0; c < cn; ++c) {
      const int64_t seen = p.keys_seen(ref.rows[c0 + c]);
      auto col = pt.col(c);
      if (seen == 0) {  // O = 0 and LSE = -inf, exactly like the reference
        col.setZero();
        if (e4m3_o) pt_norm.col(c).setZero();
        continue;
      }
      // S stored in the dtype (e4m3: float32 scores, as the FP8 kernels keep them)
      if (!fp8)
        for (int64_t j = 0; j < seen; ++j) col(j) = round_to(col(j), p.dtype);
      const float m = col.head(seen).maxCoeff();
      float l = 0.f;
      for (int64_t j = 0; j < seen; ++j) l += (col(j) = std::exp(col(j) - m));
      // e4m3, cuDNN's form: P = exp(s - m) / l, rounded as P * 448 and descaled.
      if (e4m3_o) {
        for (int64_t j = 0; j < seen; ++j)
          pt_norm(j, c) = round_e4m3(col(j) / l * kE4m3Max) * (1.f / kE4m3Max);
        pt_norm.col(c).tail(n_vis - seen).setZero();
      }
      // e4m3: exp(s - m) in [0, 1] rounded to e4m3 unscaled, normalized after P V
      // (fa3's FP8 forward); else the normalized P rounded to the dtype.
      if (fp8)
        for (int64_t j = 0; j < seen; ++j) col(j) = round_e4m3(col(j)) / l;
      else
        for (int64_t j = 0; j < seen; ++j) col(j) = round_to(col(j) / l, p.dtype);
      col.tail(n_vis - seen).setZero();
      const double ref_lse = ref.lse[size_t(bh) * n_rows + c0 + c];
      err.lse_max_abs = nan_max(err.lse_max_abs, std::abs(double(m + std::log(l)) - ref_lse));
    }
    ColF oc = ColF::Zero(d, cn), oc_norm;
    if (n_vis > 0) oc.noalias() = v.topRows(n_vis).transpose() * pt;
    if (e4m3_o) {
      oc_norm = ColF::Zero(d, cn);
      if (n_vis > 0) oc_norm.noalias() = v.topRows(n_vis).transpose() * pt_norm;
    }
    for (int64_t c = 0; c < cn; ++c) {
      const double* r = ref.o.data() + ((b * n_rows + c0 + c) * p.heads + h) * d;
      for (int64_t e = 0; e < d; ++e) {
        err.o_max_abs = nan_max(err.o_max_abs, std::abs(double(round_to(oc(e, c), out_dtype)) - r[e]));
        if (!e4m3_o) continue;
        const float o8 = round_e4m3(oc_norm(e, c) * in.o_scale) / in.o_scale;
        err.o_max_abs_e4m3_o = nan_max(err.o_max_abs_e4m3_o, std::abs(double(o8) - r[e]));
        err.ref_o_max = nan_max(err.ref_o_max, std::abs(r[e]));
      }
    }
  });
  StandardErrors total;
  for (const auto& e : per_worker) {
    total.o_max_abs = nan_max(total.o_max_abs, e.o_max_abs);
    total.lse_max_abs = nan_max(total.lse_max_abs, e.lse_max_abs);
    total.o_max_abs_e4m3_o = nan_max(total.o_max_abs_e4m3_o, e.o_max_abs_e4m3_o);
    total.ref_o_max = nan_max(total.ref_o_max, e.ref_o_max);
  }
  return total;
}

// The standard's errors from its outputs on the reference's rows: O everywhere,
// LSE on rows that see a key (the standard_in_precision figures).
StandardErrors standard_errors(const AttnProblem& p, const StandardRows& s, const ReferenceOutputs& ref) {
  if (s.rows != ref.rows || s.o.size() != ref.o.size() || s.lse.size() != ref.lse.size())
    throw KernelError(fmt::format("tolerances_for: the standard's rows or sizes do not match the reference's on {}",
                                  p.describe()));
  StandardErrors err;
  for (size_t i = 0; i < ref.o.size(); ++i) err.o_max_abs = nan_max(err.o_max_abs, std::abs(double(s.o[i]) - ref.o[i]));
  for (size_t i = 0; i < ref.lse.size(); ++i)
    if (!(std::isinf(ref.lse[i]) && ref.lse[i] < 0))
      err.lse_max_abs = nan_max(err.lse_max_abs, std::abs(double(s.lse[i]) - ref.lse[i]));
  return err;
}

Tolerances tolerances_from(const AttnProblem& p, const StandardErrors& e) {
  Tolerances t;
  t.tolerance = 2.0 * e.o_max_abs + dtype_floor(p.dtype);
  t.lse_tolerance = kLseFloor + 2.0 * e.lse_max_abs;
  return t;
}

}  // namespace

ErrorMetrics compare_outputs(const AttnProblem& p, const HostOutputs& out,
                             const ReferenceOutputs& ref) {
  check_sizes(p, out.o.size(), out.lse.size(), "compare_outputs");
  const int64_t n_rows = int64_t(ref.rows.size()), d = p.head_dim, nq = p.seqlen_q;
  ErrorMetrics m;
  m.rows_checked = n_rows;
  m.sampled = n_rows < nq;
  ErrorAccumulator o_err, lse_err;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t ri = 0; ri < n_rows; ++ri) {
      const int64_t row = ref.rows[ri];
      for (int64_t h = 0; h < p.heads; ++h) {
        const float* o = out.o.data() + ((b * nq + row) * p.heads + h) * d;
        const double* r = ref.o.data() + ((b * n_rows + ri) * p.heads + h) * d;
        for (int64_t c = 0; c < d; ++c) o_err.add(o[c], r[c]);
        const double lr = ref.lse[(size_t(b) * p.heads + h) * n_rows + ri];
        const float lo = out.lse[(size_t(b) * p.heads + h) * nq + row];
        if (std::isinf(lr)) {  // a row that sees no key: only -inf is right
          if (!(std::isinf(lo) && lo < 0)) m.lse_max_abs = m.lse_max_rel = INFINITY;
        } else {
          lse_err.add(lo, lr);  // a NaN reference LSE makes both maxima NaN
        }
      }
    }
  m.nonfinite = o_err.nonfinite + lse_err.nonfinite;
  m.o_max_abs = o_err.max_abs;
  m.o_max_rel = o_err.max_rel;
  m.o_rel_l2 = o_err.rel_l2();  // all-zero reference (no row sees a key): the plain L2
  m.lse_max_abs = nan_max(m.lse_max_abs, lse_err.max_abs);
  m.lse_max_rel = nan_max(m.lse_max_rel, lse_err.max_rel);
  m.lse_rel_l2 = lse_err.rel_l2();
  return m;
}

double dtype_floor(DType d) {
  switch (d) {
    case DType::f32: return 1e-5;
    case DType::f16: return 1e-3;
    case DType::bf16: return 4e-3;
    case DType::e4m3: return dtype_floor(output_dtype(d));  // the floor of O's dtype
  }
  return 0;
}

double o_tolerance(const AttnProblem& p, const HostInputs& in, const ReferenceOutputs& ref) {
  return 2.0 * standard_in_precision(p, in, ref).o_max_abs + dtype_floor(p.dtype);
}

Tolerances tolerances_for(const AttnProblem& p, const HostInputs& in, const ReferenceOutputs& ref,
                          Tolerances* e4m3_o) {
  const StandardErrors e = standard_in_precision(p, in, ref);
  const Tolerances t = tolerances_from(p, e);
  if (e4m3_o) {
    if (p.dtype != DType::e4m3 || !(in.o_scale > 0))
      throw KernelError(fmt::format("tolerances_for: an e4m3 O's tolerances need an e4m3 point with O's scale ({})",
                                    p.describe()));
    *e4m3_o = t;
    e4m3_o->tolerance = 2.0 * e.o_max_abs_e4m3_o + e4m3_o_floor(e.ref_o_max, in.o_scale);
  }
  return t;
}

Tolerances tolerances_for(const AttnProblem& p, const StandardRows& s, const ReferenceOutputs& ref) {
  return tolerances_from(p, standard_errors(p, s, ref));
}

Tolerances tolerances_for(const AttnProblem& p, const ErrorMetrics& standard) {
  const bool broken = standard.nonfinite > 0;
  return tolerances_from(p, StandardErrors{broken ? NAN : standard.o_max_abs, broken ? NAN : standard.lse_max_abs});
}

double e4m3_o_floor(double ref_o_max, float o_scale) {
  if (!(o_scale > 0)) throw KernelError("e4m3_o_floor: an e4m3 O needs a positive scale");
  return std::ldexp(ref_o_max, -4) + std::ldexp(1.0, -10) / o_scale;
}

bool passes(const ErrorMetrics& m, const Tolerances& t) {
  const double lse_bound = t.lse_tolerance > 0 ? t.lse_tolerance : kLseFloor;
  return m.nonfinite == 0 && m.o_max_abs <= t.tolerance && m.lse_max_abs <= lse_bound;
}

}  // namespace fa
