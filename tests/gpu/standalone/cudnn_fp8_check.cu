// cuDNN's FP8 (e4m3) attention forward on its own (kernels/cudnn/cudnn_sdpa_fp8.h):
// correctness against a float64 reference on the dequantized inputs, then
// timing at the FlashAttention papers' shapes.
//
//   cudnn_fp8_check [quick] [time] [--o=auto|bf16|e4m3] [--csv=PATH]
//   cudnn_fp8_check --cpu-selftest
//     (always)   correctness suite (quick: its first three shapes); exit 1 on any failure
//     time       + forward timings: batch*seqlen = 16384, heads = 2048/head_dim, head_dim
//                64/128/256, seqlen 512..16384, causal and not; CUDA events, L2 flushed
//                and the stream held by a spin before each sample, median of 30 after
//                3 warm-ups; each shape first validated on 16 sampled rows
//     --o        O's type: bf16, e4m3, or auto (bf16, and e4m3 where cuDNN refuses bf16)
//     --cpu-selftest  the host side alone (quantization, reference, standard, verdicts
//                against planted faults); needs no GPU
//
// Exits 77 (skipped) without a CUDA device or on one before Hopper.
//
// Inputs: N(0,1) floats quantized per tensor (fa::quantize_e4m3: descale =
// amax / 448). P is rounded as P * scale_s with scale_s = 448 (P <= 1),
// descale_s = 1/448; an e4m3 O uses scale_o = 224 / max|V| (|O| <= max|V|,
// with room). Tolerance: O max abs error <= 2x that of a standard in FP8
// precision on the same rows (scores from the codes as the FP8 tensor cores add
// them up, check/fp8_mma.h, times the descales,
// P = softmax rounded to e4m3 after * scale_s then descaled, float32 P V, O
// rounded to O's type) + 4e-3; LSE abs error <= 1e-3 + 2x the standard's.
// amax_s and amax_o are reported against the reference's maxima over the
// checked rows (every row for the smaller shapes). A cuDNN refusal is a row of
// the table, not a failure; the run fails when nothing ran. Seeds are printed.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/e4m3.h"
#include "check/fp8_quant.h"
#include "check_cuda_throw.h"
#include "common/mask.cuh"
#include "cudnn/cudnn_sdpa_fp8.h"
#include "cudnn_check_util.cuh"
#include "fp8_row_reference.h"

namespace {

using fa::cudnn_sdpa_fp8::Fp8Params;
using fa::cudnn_sdpa_fp8::OType;

constexpr float kScaleS = fa::kE4m3Max;  // P <= 1: its largest value maps to e4m3's largest
constexpr double kOFloor = 4e-3, kLseFloor = 1e-3;

const char* o_name(OType t) { return t == OType::bf16 ? "bf16" : "e4m3"; }

struct Shape {
  int batch = 1, heads = 1, heads_kv = 1, seqlen_q = 1, seqlen_k = 1, head_dim = 64;
  bool causal = false;
  bool expect_refusal = false;  // refused before cuDNN is asked
  std::string describe() const {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "b%d h%d/%d q%d k%d d%d%s", batch, heads, heads_kv, seqlen_q, seqlen_k, head_dim,
                  causal ? " causal" : "");
    return buf;
  }
  double flops() const { return 4.0 * batch * heads * double(seqlen_q) * seqlen_k * head_dim * (causal ? 0.5 : 1.0); }
  size_t nq() const { return size_t(batch) * seqlen_q * heads * head_dim; }
  size_t nk() const { return size_t(batch) * seqlen_k * heads_kv * head_dim; }
  size_t n_lse() const { return size_t(batch) * heads * seqlen_q; }
};

// e4m3 codes of Q, K, V (BSHD) with their per-tensor descales.
struct Inputs {
  std::vector<uint8_t> q, k, v;
  float descale_q = 1.f, descale_k = 1.f, descale_v = 1.f;
};

// The factors a run uses besides the input descales.
struct Scales {
  float softmax_scale = 0.f, scale_s = kScaleS, descale_s = 1.f / kScaleS;
  OType o_type = OType::bf16;
  float scale_o = 1.f;  // e4m3 O only
};

// Every e4m3 code's value (exact in float).
const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> a{};
    for (int i = 0; i < 256; ++i) a[size_t(i)] = fa::decode_e4m3(uint8_t(i));
    return a;
  }();
  return t;
}

float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
float bf16_bits_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// O as stored, rounded to its type (an e4m3 O through scale_o), back in float.
float round_o(float x, const Scales& sc) {
  if (sc.o_type == OType::bf16) return bf16_round(x);
  return fa::decode_e4m3(fa::encode_e4m3(x * sc.scale_o)) / sc.scale_o;
}

// max |V| of the dequantized inputs.
float v_amax(const Inputs& in) {
  float vmax = 0.f;
  for (uint8_t c : in.v) vmax = std::max(vmax, std::fabs(e4m3_table()[c]));
  return vmax * in.descale_v;
}

Scales scales_for(const Shape& s, const Inputs& in, OType o_type) {
  Scales sc;
  sc.softmax_scale = 1.f / std::sqrt(float(s.head_dim));
  sc.o_type = o_type;
  if (o_type == OType::e4m3) {
    const float vmax = v_amax(in);
    // |O| <= max|V|; half of e4m3's range leaves room for rounded P summing past 1.
    sc.scale_o = vmax > 0.f ? 0.5f * fa::kE4m3Max / vmax : 1.f;
  }
  return sc;
}

// N(0,1) floats per tensor, quantized per tensor by fa::quantize_e4m3.
Inputs make_inputs(const Shape& s, uint64_t seed) {
  Inputs in;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto quantize = [&](int seqlen, int heads, std::vector<uint8_t>* codes, float* descale) {
    const fa::BshdShape sh{s.batch, seqlen, heads, s.head_dim};
    std::vector<float> x(size_t(sh.elements()));
    for (float& e : x) e = normal(rng);
    fa::Fp8Tensor t = fa::quantize_e4m3(x, sh, fa::Fp8Scaling::tensor);
    *codes = std::move(t.codes);
    *descale = t.descales.at(0);
  };
  quantize(s.seqlen_q, s.heads, &in.q, &in.descale_q);
  quantize(s.seqlen_k, s.heads_kv, &in.k, &in.descale_k);
  quantize(s.seqlen_k, s.heads_kv, &in.v, &in.descale_v);
  return in;
}

// ---- the float64 reference and the FP8-precision standard, one row at a time ----

struct RowRef {
  std::vector<double> o;       // float64 on the dequantized inputs
  std::vector<float> o_std;    // the standard, rounded to O's type
  double lse = 0, lse_std = 0;
  double max_p = 0;            // largest softmax probability of the row (float64)
};

// One past the last key row `row` sees; bottom-right causal (common/mask.cuh).
int key_end(const Shape& s, int row) { return fa::KeyRange{s.seqlen_q, s.seqlen_k, s.causal}.key_end(row); }

RowRef reference_row(const Shape& s, const Inputs& in, const Scales& sc, int b, int h, int row) {
  const int d = s.head_dim, hk = h / (s.heads / s.heads_kv);
  RowRef r;
  r.o.assign(size_t(d), 0.0);
  r.o_std.assign(size_t(d), 0.f);
  fa::standalone::Fp8Row fr;
  fr.keys = key_end(s, row);
  if (fr.keys <= 0) return r;  // refused shapes only
  const size_t kv_at = (size_t(b) * s.seqlen_k * s.heads_kv + hk) * d;
  fr.q = &in.q[((size_t(b) * s.seqlen_q + row) * s.heads + h) * d];
  fr.k = &in.k[kv_at];
  fr.v = &in.v[kv_at];
  fr.key_stride = int64_t(s.heads_kv) * d;
  fr.head_dim = d;
  fr.q_descale = in.descale_q, fr.k_descale = in.descale_k, fr.v_descale = in.descale_v;
  fr.ref_scale = double(sc.softmax_scale);
  fr.score_scale = sc.softmax_scale * in.descale_q * in.descale_k;
  const fa::standalone::Fp8RowReference ref = fa::standalone::fp8_row_reference(fr);
  r.o = ref.o;
  r.lse = ref.lse;
  r.lse_std = ref.lse_std();
  r.max_p = ref.max_p;
  // cuDNN's form: the normalized P scaled by scale_s, rounded to e4m3 and
  // descaled; O stored in its type (round_o).
  r.o_std = fa::standalone::fp8_standard_o(
      fr, ref, [&](float e, float l) { return fa::decode_e4m3(fa::encode_e4m3(e / l * sc.scale_s)) * sc.descale_s; },
      [&](float acc, float) { return round_o(acc, sc); });
  return r;
}

// ---- comparison ----

struct Errors {
  double o_max_abs = 0, o_std_max_abs = 0, lse_max_abs = 0, lse_std_max_abs = 0;
  double amax_s_ref = 0, amax_o_ref = 0;  // over the checked rows
  int64_t nonfinite = 0, rows = 0;
  bool all_rows = false;
};

bool passes(const Errors& e) {
  return e.nonfinite == 0 && e.rows > 0 && e.o_max_abs <= 2 * e.o_std_max_abs + kOFloor &&
         e.lse_max_abs <= kLseFloor + 2 * e.lse_std_max_abs;
}

// The (batch, head, row) triples to check: every row when the shape is small,
// else the first, the last and random ones.
std::vector<std::array<int, 3>> rows_to_check(const Shape& s, int samples, uint64_t seed, bool* all) {
  std::vector<std::array<int, 3>> out;
  const int64_t total = int64_t(s.batch) * s.heads * s.seqlen_q;
  *all = total <= 8192 && int64_t(s.seqlen_k) * s.head_dim <= 131072 && samples > 16;
  if (*all) {
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h)
        for (int r = 0; r < s.seqlen_q; ++r) out.push_back({b, h, r});
    return out;
  }
  std::mt19937_64 rng(seed);
  for (int t = 0; t < samples; ++t) {
    const int row = t == 0 ? 0 : t == 1 ? s.seqlen_q - 1 : int(rng() % uint64_t(s.seqlen_q));
    out.push_back({int(rng() % uint64_t(s.batch)), int(rng() % uint64_t(s.heads)), row});
  }
  return out;
}

// o_got: O as floats (decoded, descaled), BSHD; lse_got: [batch, heads, seqlen_q].
Errors compare(const Shape& s, const Inputs& in, const Scales& sc, const std::vector<float>& o_got,
               const std::vector<float>& lse_got, int samples, uint64_t seed) {
  Errors e;
  for (float x : o_got) e.nonfinite += !std::isfinite(x);
  for (float x : lse_got) e.nonfinite += !std::isfinite(x);
  const int d = s.head_dim;
  for (const auto& [b, h, row] : rows_to_check(s, samples, seed, &e.all_rows)) {
    if (key_end(s, row) <= 0) continue;
    const RowRef r = reference_row(s, in, sc, b, h, row);
    const size_t off = ((size_t(b) * s.seqlen_q + row) * s.heads + h) * d;
    for (int c = 0; c < d; ++c) {
      e.o_max_abs = std::max(e.o_max_abs, std::fabs(double(o_got[off + size_t(c)]) - r.o[size_t(c)]));
      e.o_std_max_abs = std::max(e.o_std_max_abs, std::fabs(double(r.o_std[size_t(c)]) - r.o[size_t(c)]));
      e.amax_o_ref = std::max(e.amax_o_ref, std::fabs(r.o[size_t(c)]));
    }
    const double lse = lse_got[(size_t(b) * s.heads + h) * s.seqlen_q + row];
    e.lse_max_abs = std::max(e.lse_max_abs, std::fabs(lse - r.lse));
    e.lse_std_max_abs = std::max(e.lse_std_max_abs, std::fabs(r.lse_std - r.lse));
    e.amax_s_ref = std::max(e.amax_s_ref, r.max_p);
    ++e.rows;
  }
  return e;
}

// ---- the device side ----

// Q, K, V codes, O, LSE, the scale factors and amax outputs of one problem.
struct Device {
  Shape s;
  uint8_t *q = nullptr, *k = nullptr, *v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  float* factors = nullptr;  // 8 slots of 16 floats: every factor 64-byte aligned
  void* ws = nullptr;
  int64_t ws_bytes = 0;
  enum Slot { kDescaleQ, kDescaleK, kDescaleV, kDescaleS, kScaleS, kScaleO, kAmaxS, kAmaxO, kSlots };
  explicit Device(const Shape& sh) : s(sh) {
    CHECK_CUDA(cudaMalloc(&q, s.nq()));
    CHECK_CUDA(cudaMalloc(&k, s.nk()));
    CHECK_CUDA(cudaMalloc(&v, s.nk()));
    CHECK_CUDA(cudaMalloc(&o, s.nq() * 2));  // room for bf16
    CHECK_CUDA(cudaMalloc(&lse, s.n_lse() * 4));
    CHECK_CUDA(cudaMalloc(&factors, kSlots * 16 * sizeof(float)));
  }
  ~Device() { cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse), cudaFree(factors), cudaFree(ws); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  float* slot(Slot i) const { return factors + 16 * i; }

  void upload(const Inputs& in) {
    CHECK_CUDA(cudaMemcpy(q, in.q.data(), s.nq(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(k, in.k.data(), s.nk(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(v, in.v.data(), s.nk(), cudaMemcpyHostToDevice));
  }
  void set_factors(const Inputs& in, const Scales& sc) {
    const float values[] = {in.descale_q, in.descale_k, in.descale_v, sc.descale_s, sc.scale_s, sc.scale_o};
    for (int i = 0; i < 6; ++i) CHECK_CUDA(cudaMemcpy(slot(Slot(i)), &values[i], 4, cudaMemcpyHostToDevice));
  }
  Fp8Params params(const Scales& sc) const {
    Fp8Params p;
    p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
    p.descale_q = slot(kDescaleQ), p.descale_k = slot(kDescaleK), p.descale_v = slot(kDescaleV);
    p.descale_s = slot(kDescaleS), p.scale_s = slot(kScaleS), p.scale_o = slot(kScaleO);
    p.amax_s = slot(kAmaxS), p.amax_o = slot(kAmaxO);
    p.batch = s.batch, p.heads = s.heads, p.heads_kv = s.heads_kv;
    p.seqlen_q = s.seqlen_q, p.seqlen_k = s.seqlen_k, p.head_dim = s.head_dim;
    fa::cudnn_sdpa_fp8::set_contiguous_strides(p);
    p.softmax_scale = sc.softmax_scale;
    p.causal = s.causal;
    p.o_type = sc.o_type;
    p.workspace = ws, p.workspace_bytes = ws_bytes;
    return p;
  }
  // Plans p's shape and sizes the workspace, or returns the refusal.
  const char* prepare(const Scales& sc) {
    const Fp8Params p = params(sc);
    if (const char* why = fa::cudnn_sdpa_fp8::unsupported(p)) return why;
    const int64_t need = fa::cudnn_sdpa_fp8::workspace_bytes(p);
    if (need > ws_bytes) {
      cudaFree(ws);
      ws = nullptr;
      CHECK_CUDA(cudaMalloc(&ws, size_t(need)));
      ws_bytes = need;
    }
    return nullptr;
  }
  void launch(const Scales& sc) const {
    const int rc = fa::cudnn_sdpa_fp8::launch(params(sc), nullptr);
    if (rc != 0) throw std::runtime_error(std::string("cudnn fp8 forward: ") + cudaGetErrorString(cudaError_t(rc)));
    CHECK_CUDA(cudaGetLastError());
  }
};

struct Outputs {
  std::vector<float> o, lse;
  float amax_s = NAN, amax_o = NAN;
};

// One run on poisoned outputs (NaN in bf16, e4m3 and float), copied back and
// decoded. The amax outputs start at zero instead: FP8 kernels may fold their
// maxima into what is there (users of cuDNN's FP8 attention zero them).
Outputs run_once(Device& dev, const Scales& sc) {
  const Shape& s = dev.s;
  CHECK_CUDA(cudaMemset(dev.o, 0xff, s.nq() * 2));
  CHECK_CUDA(cudaMemset(dev.lse, 0xff, s.n_lse() * 4));
  CHECK_CUDA(cudaMemset(dev.slot(Device::kAmaxS), 0, 4));
  CHECK_CUDA(cudaMemset(dev.slot(Device::kAmaxO), 0, 4));
  dev.launch(sc);
  CHECK_CUDA(cudaDeviceSynchronize());
  Outputs out;
  out.o.resize(s.nq());
  if (sc.o_type == OType::bf16) {
    std::vector<uint16_t> bits(s.nq());
    CHECK_CUDA(cudaMemcpy(bits.data(), dev.o, s.nq() * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bits.size(); ++i) out.o[i] = bf16_bits_to_float(bits[i]);
  } else {
    std::vector<uint8_t> codes(s.nq());
    CHECK_CUDA(cudaMemcpy(codes.data(), dev.o, s.nq(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < codes.size(); ++i) out.o[i] = e4m3_table()[codes[i]] / sc.scale_o;
  }
  out.lse.resize(s.n_lse());
  CHECK_CUDA(cudaMemcpy(out.lse.data(), dev.lse, s.n_lse() * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&out.amax_s, dev.slot(Device::kAmaxS), 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&out.amax_o, dev.slot(Device::kAmaxO), 4, cudaMemcpyDeviceToHost));
  return out;
}

// Picks O's type (auto: bf16, else e4m3 where cuDNN refuses bf16) and plans
// the shape; *why holds the refusal when neither runs, *notes what was tried.
bool plan_with_o(Device& dev, const Inputs& in, const std::string& o_mode, Scales* sc, std::string* why,
                 std::string* notes) {
  std::vector<OType> order;
  if (o_mode != "e4m3") order.push_back(OType::bf16);
  if (o_mode != "bf16") order.push_back(OType::e4m3);
  for (OType t : order) {
    *sc = scales_for(dev.s, in, t);
    if (const char* w = dev.prepare(*sc)) {
      *why = w;
      if (!notes->empty()) *notes += "; ";
      *notes += std::string("O ") + o_name(t) + " refused: " + w;
      continue;
    }
    return true;
  }
  return false;
}

// After a run that threw: a sticky CUDA error (the context is lost) ends the
// program; anything else (cuDNN failing one execute) leaves the next shape to run.
void end_unless_recoverable() {
  cudaGetLastError();
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA context lost: ") + cudaGetErrorString(e));
}

std::string amax_cell(float got, double ref, bool all_rows) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4g/%.4g%s", got, ref, all_rows ? "" : "+");
  return buf;
}

int run_checks(uint64_t seed, bool quick, const std::string& o_mode, int* ran) {
  std::vector<Shape> shapes = {
      {2, 8, 8, 512, 512, 128, false},
      {2, 8, 8, 512, 512, 128, true},
      {2, 8, 2, 384, 640, 64, true},       // GQA, bottom-right shifted diagonal
      {1, 4, 1, 1, 1000, 256, true},       // MQA, one query row sees every key
      {3, 6, 3, 257, 129, 128, false},     // odd lengths, seqlen_q > seqlen_k
      {1, 16, 16, 1024, 1024, 256, true},
      {4, 16, 16, 1000, 1000, 64, true},
      {2, 8, 4, 1000, 1000, 128, false},   // GQA at seqlen 1000
      {2, 4, 4, 512, 512, 256, false},
      {1, 8, 8, 640, 512, 128, true, /*expect_refusal=*/true},  // rows that see no key
  };
  if (quick) shapes.resize(3);
  int failures = 0;
  std::printf("%-30s %-4s %9s %9s %9s %9s %17s %17s %6s %6s  %s\n", "shape", "O", "o_err", "std_err", "lse_err",
              "lse_std", "amax_s got/ref", "amax_o got/ref", "nonfin", "rows", "verdict");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const uint64_t shape_seed = seed + 1000 * i;
    const Inputs in = make_inputs(s, shape_seed);
    Device dev(s);
    dev.upload(in);
    Scales sc;
    std::string why, notes;
    if (!plan_with_o(dev, in, o_mode, &sc, &why, &notes)) {
      // Ours refuse before cuDNN is asked ("cudnn fp8: ..." without a graph step);
      // an expected refusal must come, an unexpected one is cuDNN's and is a row.
      const bool ok = s.expect_refusal;
      std::printf("%-30s refused: %s  %s\n", s.describe().c_str(), notes.c_str(), ok ? "PASS (expected)" : "REFUSED");
      continue;
    }
    if (s.expect_refusal) {
      ++failures;
      std::printf("%-30s not refused  FAIL (expected a refusal)\n", s.describe().c_str());
      continue;
    }
    dev.set_factors(in, sc);
    Outputs out;
    try {
      out = run_once(dev, sc);
    } catch (const std::exception& ex) {
      ++failures;
      std::printf("%-30s %-4s error: %s  FAIL (seed %llu)\n", s.describe().c_str(), o_name(sc.o_type), ex.what(),
                  (unsigned long long)shape_seed);
      end_unless_recoverable();
      continue;
    }
    const Errors e = compare(s, in, sc, out.o, out.lse, 256, shape_seed);
    const bool amax_finite = std::isfinite(out.amax_s) && std::isfinite(out.amax_o);
    const bool ok = passes(e) && amax_finite;
    failures += !ok;
    ++*ran;
    fa::cudnn_sdpa_fp8::PlanInfo info;
    fa::cudnn_sdpa_fp8::plan_info(dev.params(sc), &info);
    std::printf("%-30s %-4s %9.3g %9.3g %9.3g %9.3g %17s %17s %6lld %6lld  %s (seed %llu, engine %lld, workspace %lld B)%s%s\n",
                s.describe().c_str(), o_name(sc.o_type), e.o_max_abs, e.o_std_max_abs, e.lse_max_abs,
                e.lse_std_max_abs, amax_cell(out.amax_s, e.amax_s_ref, e.all_rows).c_str(),
                amax_cell(out.amax_o, e.amax_o_ref, e.all_rows).c_str(), (long long)e.nonfinite, (long long)e.rows,
                ok ? "PASS" : "FAIL", (unsigned long long)shape_seed, (long long)info.engine_index,
                (long long)info.workspace_bytes, notes.empty() ? "" : "; ", notes.c_str());
  }
  std::printf("(amax ref: the float64 maxima over the checked rows; '+' marks sampled rows, a lower bound)\n");
  return failures;
}

// ---- timing ----

// Keeps the stream busy while the host records the start event and enqueues
// the launch (cuDNN's variant pack is built on the host each time), so host
// work never lands between the events.
__global__ void hold_stream(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Median of 30 CUDA-event samples after 3 warm-ups; before each, a memset of
// twice the L2 empties it (as cudnn_check) and a ~100 us spin holds the stream.
double time_ms(const Device& dev, const Scales& sc) {
  int id = 0, l2 = 0, clock_khz = 0;
  CHECK_CUDA(cudaGetDevice(&id));
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, id));
  CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, id));
  const size_t flush_bytes = 2 * size_t(l2);
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) dev.launch(sc);
  std::vector<double> ms;
  for (int i = 0; i < 30; ++i) {
    CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    hold_stream<<<1, 1>>>((long long)clock_khz * 100 / 1000);
    CHECK_CUDA(cudaEventRecord(e0));
    dev.launch(sc);
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float t = 0.f;
    CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  cudaEventDestroy(e0), cudaEventDestroy(e1), cudaFree(flush);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Seeded N(0,1) (counter hash, Box-Muller) times 448 / clip, to e4m3 with saturation.
__global__ void fill_e4m3(uint8_t* out, size_t n, uint64_t seed, float clip) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t h = cudnn_check::mix(seed ^ cudnn_check::mix(i + 1));
    const float u1 = (float((h >> 40) & 0xffffff) + 1.f) / 16777217.f, u2 = float((h >> 8) & 0xffffff) / 16777216.f;
    const float z = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
    out[i] = uint8_t(__nv_cvt_float_to_fp8(z * (448.f / clip), __NV_SATFINITE, __NV_E4M3));
  }
}

// The papers' forward benchmark. Inputs are made on the device (N(0,1), values
// beyond +-clip saturate; descale = clip / 448) and each shape is validated on
// 16 sampled rows from the codes copied back before it is timed.
int run_timing(uint64_t seed, const std::string& o_mode, FILE* csv, int* ran) {
  constexpr float kClip = 5.5f;
  int failures = 0;
  if (csv) std::fprintf(csv, "impl,dtype,o_type,causal,hdim,seqlen,batch,heads,ms,tflops,check\n");
  std::printf("\n%-6s %-6s %-8s %-4s %10s %10s %s\n", "hdim", "causal", "seqlen", "O", "ms", "TFLOP/s", "check");
  for (int hd : {64, 128, 256}) {
    for (int n : {512, 1024, 2048, 4096, 8192, 16384}) {
      const Shape base{16384 / n, 2048 / hd, 2048 / hd, n, n, hd, false};
      Device dev(base);
      const uint64_t shape_seed = seed + uint64_t(hd) * 100000 + uint64_t(n);
      fill_e4m3<<<1024, 256>>>(dev.q, base.nq(), shape_seed, kClip);
      fill_e4m3<<<1024, 256>>>(dev.k, base.nk(), shape_seed + 1, kClip);
      fill_e4m3<<<1024, 256>>>(dev.v, base.nk(), shape_seed + 2, kClip);
      CHECK_CUDA(cudaGetLastError());
      Inputs in;
      in.descale_q = in.descale_k = in.descale_v = kClip / 448.f;
      in.q.resize(base.nq()), in.k.resize(base.nk()), in.v.resize(base.nk());
      CHECK_CUDA(cudaMemcpy(in.q.data(), dev.q, base.nq(), cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(in.k.data(), dev.k, base.nk(), cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(in.v.data(), dev.v, base.nk(), cudaMemcpyDeviceToHost));
      for (bool causal : {false, true}) {
        dev.s.causal = causal;
        const Shape& s = dev.s;
        Scales sc;
        std::string why, notes;
        if (!plan_with_o(dev, in, o_mode, &sc, &why, &notes)) {
          std::printf("%-6d %-6d %-8d refused: %s\n", hd, int(causal), n, notes.c_str());
          continue;
        }
        dev.set_factors(in, sc);
        Outputs out;
        double ms = 0;
        try {
          out = run_once(dev, sc);
          ms = time_ms(dev, sc);
        } catch (const std::exception& ex) {
          ++failures;
          std::printf("%-6d %-6d %-8d %-4s error: %s  FAIL\n", hd, int(causal), n, o_name(sc.o_type), ex.what());
          end_unless_recoverable();
          continue;
        }
        const Errors e = compare(s, in, sc, out.o, out.lse, 16, shape_seed);
        const bool ok = passes(e) && std::isfinite(out.amax_s) && std::isfinite(out.amax_o);
        failures += !ok;
        ++*ran;
        const double tf = s.flops() / (ms * 1e-3) / 1e12;
        std::printf("%-6d %-6d %-8d %-4s %10.4f %10.1f %s (o_err %.3g, std %.3g, lse %.3g)%s%s\n", hd, int(causal), n,
                    o_name(sc.o_type), ms, tf, ok ? "PASS" : "FAIL", e.o_max_abs, e.o_std_max_abs, e.lse_max_abs,
                    notes.empty() ? "" : "; ", notes.c_str());
        if (csv)
          std::fprintf(csv, "cudnn_fp8,e4m3,%s,%d,%d,%d,%d,%d,%.4f,%.1f,%s\n", o_name(sc.o_type), int(causal), hd, n,
                       s.batch, s.heads, ms, tf, ok ? "PASS" : "FAIL");
        if (csv) std::fflush(csv);  // a run cut by its time limit keeps every finished row
      }
    }
  }
  return failures;
}

// ---- the host side on its own ----

int selftest_failures = 0;
void expect(bool cond, const char* what) {
  std::printf("  %-72s %s\n", what, cond ? "ok" : "FAILED");
  selftest_failures += !cond;
}

// The reference, the standard and the verdicts on small shapes, without a GPU:
// the standard's own output must pass, planted faults must fail.
int cpu_selftest(uint64_t seed) {
  std::printf("cudnn_fp8_check --cpu-selftest (seed %llu)\n", (unsigned long long)seed);
  {
    // Quantization: per-tensor descale = amax / 448, round trip within half an e4m3 step.
    const Shape s{1, 2, 2, 33, 33, 64, false};
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> x(s.nq());
    for (float& e : x) e = normal(rng);
    const fa::Fp8Tensor t = fa::quantize_e4m3(x, {s.batch, s.seqlen_q, s.heads, s.head_dim}, fa::Fp8Scaling::tensor);
    float amax = 0.f;
    for (float e : x) amax = std::max(amax, std::fabs(e));
    expect(std::fabs(t.descales.at(0) - amax / 448.f) <= 1e-6f * amax, "quantize: descale = amax / 448");
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double back = double(e4m3_table()[t.codes[i]]) * t.descales[0];
      const double half_step = 0.5 * fa::e4m3_ulp(double(x[i]) / t.descales[0]) * t.descales[0];
      worst = std::max(worst, std::fabs(back - x[i]) / half_step);
    }
    expect(worst <= 1.0 + 1e-6, "quantize: every value within half an e4m3 step");
  }
  for (OType o_type : {OType::bf16, OType::e4m3}) {
    std::printf(" O %s\n", o_name(o_type));
    const Shape s{1, 4, 2, 48, 80, 64, true};  // GQA, bottom-right causal, seqlen_q < seqlen_k
    const Inputs in = make_inputs(s, seed);
    const Scales sc = scales_for(s, in, o_type);
    // The standard's own output in the kernel's place.
    std::vector<float> o(s.nq()), lse(s.n_lse());
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h)
        for (int r = 0; r < s.seqlen_q; ++r) {
          const RowRef ref = reference_row(s, in, sc, b, h, r);
          const size_t off = ((size_t(b) * s.seqlen_q + r) * s.heads + h) * s.head_dim;
          std::copy(ref.o_std.begin(), ref.o_std.end(), o.begin() + long(off));
          lse[(size_t(b) * s.heads + h) * s.seqlen_q + r] = float(ref.lse_std);
        }
    Errors e = compare(s, in, sc, o, lse, 256, seed);
    expect(e.all_rows && e.rows == int64_t(s.n_lse()), "every row of a small shape is checked");
    std::printf("  standard vs float64: O %.3g, LSE %.3g; amax_s %.4g, amax_o %.4g (scale_o %.4g)\n",
                e.o_std_max_abs, e.lse_std_max_abs, e.amax_s_ref, e.amax_o_ref, sc.scale_o);
    expect(passes(e), "the standard itself passes");
    // P rounded to e4m3 moves each weight by at most half an e4m3 step, 2^-4 of
    // itself, so O by at most 2^-4 max|V|; storing O adds half a step of its type
    // (2^-4 for e4m3, 2^-9 for bf16) of max|O|. Nonzero: the standard is not the reference.
    const double bound = 0x1p-4 * v_amax(in) + (o_type == OType::bf16 ? 0x1p-9 : 0x1p-4) * e.amax_o_ref;
    expect(e.o_std_max_abs > 0 && e.o_std_max_abs <= bound,
           "the standard's O error is nonzero and within e4m3 P's rounding");
    expect(e.amax_s_ref > 0.0 && e.amax_s_ref <= 1.0, "amax_s ref is a probability");
    // Bottom-right: the last row sees every key, row 0 sees seqlen_k - seqlen_q + 1.
    expect(key_end(s, s.seqlen_q - 1) == s.seqlen_k && key_end(s, 0) == s.seqlen_k - s.seqlen_q + 1,
           "bottom-right causal key ranges");
    {
      Shape full = s;
      full.causal = false;
      const RowRef a = reference_row(s, in, sc, 0, 1, s.seqlen_q - 1), b = reference_row(full, in, sc, 0, 1, s.seqlen_q - 1);
      expect(a.o == b.o && a.lse == b.lse, "causal last row equals the non-causal row");
    }
    {
      std::vector<float> bad = o;
      bad[bad.size() / 2] += 0.25f;
      expect(!passes(compare(s, in, sc, bad, lse, 256, seed)), "planted: one O element off by 0.25 fails");
    }
    {
      std::vector<float> bad = o;
      bad[7] = NAN;
      expect(!passes(compare(s, in, sc, bad, lse, 256, seed)), "planted: one NaN in O fails");
    }
    {
      std::vector<float> bad = lse;
      bad[3] += 3e-3f;
      expect(!passes(compare(s, in, sc, o, bad, 256, seed)), "planted: one LSE off by 3e-3 fails");
    }
    {
      // The non-causal output for the causal problem (the top-left/none mask mistake).
      Shape full = s;
      full.causal = false;
      std::vector<float> nc(s.nq()), nc_lse(s.n_lse());
      for (int h = 0; h < s.heads; ++h)
        for (int r = 0; r < s.seqlen_q; ++r) {
          const RowRef ref = reference_row(full, in, sc, 0, h, r);
          std::copy(ref.o_std.begin(), ref.o_std.end(), nc.begin() + long((size_t(r) * s.heads + h) * s.head_dim));
          nc_lse[size_t(h) * s.seqlen_q + r] = float(ref.lse_std);
        }
      expect(!passes(compare(s, in, sc, nc, nc_lse, 256, seed)), "planted: the unmasked output fails");
      // Top-left alignment: row r sees keys 0..r.
      std::vector<float> tl(s.nq()), tl_lse(s.n_lse());
      for (int h = 0; h < s.heads; ++h)
        for (int r = 0; r < s.seqlen_q; ++r) {
          Shape cut = full;
          cut.seqlen_k = r + 1;  // keys 0..r of the same K/V (a prefix keeps the layout of batch 0)
          const RowRef ref = reference_row(cut, in, sc, 0, h, r);
          std::copy(ref.o_std.begin(), ref.o_std.end(), tl.begin() + long((size_t(r) * s.heads + h) * s.head_dim));
          tl_lse[size_t(h) * s.seqlen_q + r] = float(ref.lse_std);
        }
      expect(!passes(compare(s, in, sc, tl, tl_lse, 256, seed)), "planted: the top-left causal output fails");
    }
  }
  std::printf("cudnn_fp8_check --cpu-selftest: %s (%d failures)\n", selftest_failures ? "FAIL" : "PASS",
              selftest_failures);
  return selftest_failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Line-buffered even into a file: a run killed by its time limit keeps its
  // seed and every finished line.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  uint64_t seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  if (const char* fixed = std::getenv("FA_SEED")) seed = std::strtoull(fixed, nullptr, 10);
  bool quick = false, timing = false, selftest = false;
  std::string o_mode = "auto", csv_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "quick") quick = true;
    else if (a == "time") timing = true;
    else if (a == "--cpu-selftest") selftest = true;
    else if (a.rfind("--o=", 0) == 0 && (a == "--o=auto" || a == "--o=bf16" || a == "--o=e4m3")) o_mode = a.substr(4);
    else if (a.rfind("--csv=", 0) == 0) csv_path = a.substr(6);
    else {
      std::fprintf(stderr, "cudnn_fp8_check: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    if (selftest) return cpu_selftest(seed);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      std::printf("cudnn_fp8_check: no CUDA device, skipped\n");
      return 77;
    }
    int major = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    if (major < 9) {
      std::printf("cudnn_fp8_check: cuDNN's FP8 attention needs compute capability 9.0 or later, skipped\n");
      return 77;
    }
    std::printf("cudnn_fp8_check: cuDNN %s, O %s, seed %llu (FA_SEED=... replays)\n",
                fa::cudnn_sdpa::runtime_version(), o_mode.c_str(), (unsigned long long)seed);
    int ran = 0;
    int failures = run_checks(seed, quick, o_mode, &ran);
    if (timing) {
      FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
      failures += run_timing(seed, o_mode, csv, &ran);
      if (csv) std::fclose(csv);
    }
    if (ran == 0) {
      std::printf("cudnn_fp8_check: FAIL (cuDNN ran no shape)\n");
      return 1;
    }
    std::printf("cudnn_fp8_check: %s (%d failures, %d shapes ran)\n", failures ? "FAIL" : "PASS", failures, ran);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudnn_fp8_check: error: %s (seed %llu)\n", e.what(), (unsigned long long)seed);
    return 1;
  }
}
