// One query row of an e4m3 attention problem on the host, shared by fp8_check
// (fa3's FP8 forward) and cudnn_fp8_check (cuDNN's): the float64 reference on
// the dequantized inputs, and the scores of the FP8-precision standard that each
// program's tolerance rests on. The scores come from the codes, added up as the
// FP8 tensor cores add them (check/fp8_mma.h: each 32-deep step truncated below
// its largest term), then scaled; float32 sums would miss that truncation, which
// the LSE floor does not always cover. How P is rounded before P V and how O is
// stored differ by kernel: each program passes its own (fp8_standard_o).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "check/fp8_mma.h"
#include "core/e4m3.h"

namespace fa::standalone {

// The row's codes and scales. K and V: key 0 of the row's K/V head, keys
// key_stride codes apart; `keys` (> 0) is how many keys the row sees.
struct Fp8Row {
  const uint8_t* q = nullptr;
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t key_stride = 0;
  int head_dim = 0, keys = 0;
  float q_descale = 1, k_descale = 1, v_descale = 1;
  double ref_scale = 0;    // the reference's softmax scale
  float score_scale = 0;   // the standard's: softmax scale x Q's descale x K's
};

struct Fp8RowReference {
  std::vector<double> o;   // float64 O
  double lse = 0, max_p = 0;
  std::vector<float> e;    // the standard's exp(s - m) per key, unnormalized
  float m = 0, l = 0;      // the standard's row maximum and sum of e
  double lse_std() const { return double(m) + std::log(double(l)); }
};

inline Fp8RowReference fp8_row_reference(const Fp8Row& r) {
  const int d = r.head_dim;
  Fp8RowReference out;
  out.o.assign(size_t(d), 0.0);
  std::vector<float> q_codes(static_cast<size_t>(d)), k_codes(static_cast<size_t>(d)),
      q_values(static_cast<size_t>(d));
  for (int c = 0; c < d; ++c) {
    q_codes[size_t(c)] = decode_e4m3(r.q[c]);
    q_values[size_t(c)] = q_codes[size_t(c)] * r.q_descale;  // as a kernel dequantizes: in float
  }
  std::vector<double> s64(static_cast<size_t>(r.keys));
  out.e.resize(size_t(r.keys));
  for (int j = 0; j < r.keys; ++j) {
    const uint8_t* k = r.k + j * r.key_stride;
    double acc = 0;
    for (int c = 0; c < d; ++c) {
      k_codes[size_t(c)] = decode_e4m3(k[c]);
      acc += double(q_values[size_t(c)]) * double(k_codes[size_t(c)] * r.k_descale);
    }
    s64[size_t(j)] = acc * r.ref_scale;
    out.e[size_t(j)] = fp8_mma_dot(q_codes.data(), k_codes.data(), d) * r.score_scale;
  }
  const double m = *std::max_element(s64.begin(), s64.end());
  out.m = *std::max_element(out.e.begin(), out.e.end());
  double l = 0;
  for (int j = 0; j < r.keys; ++j) {
    s64[size_t(j)] = std::exp(s64[size_t(j)] - m);
    l += s64[size_t(j)];
    out.e[size_t(j)] = std::exp(out.e[size_t(j)] - out.m);
    out.l += out.e[size_t(j)];
  }
  out.lse = m + std::log(l);
  for (int j = 0; j < r.keys; ++j) {
    const double p = s64[size_t(j)] / l;
    out.max_p = std::max(out.max_p, p);
    const uint8_t* v = r.v + j * r.key_stride;
    for (int c = 0; c < d; ++c) out.o[size_t(c)] += p * double(decode_e4m3(v[c]) * r.v_descale);
  }
  return out;
}

// The standard's O for the row: P[j] = p_of(e[j], l) as the kernel rounds it,
// float32 P V, then o_of(sum, l) as the kernel scales and stores it.
template <typename POf, typename OOf>
std::vector<float> fp8_standard_o(const Fp8Row& r, const Fp8RowReference& ref, POf p_of, OOf o_of) {
  std::vector<float> acc(size_t(r.head_dim), 0.f);
  for (int j = 0; j < r.keys; ++j) {
    const float p = p_of(ref.e[size_t(j)], ref.l);
    const uint8_t* v = r.v + j * r.key_stride;
    for (int c = 0; c < r.head_dim; ++c) acc[size_t(c)] += p * (decode_e4m3(v[c]) * r.v_descale);
  }
  for (float& x : acc) x = o_of(x, ref.l);
  return acc;
}

}  // namespace fa::standalone
