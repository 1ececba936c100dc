// fp8_check: the FP8 (e4m3) FA3 forward (kernels/fa3/fa3_fp8_fwd.cuh) against a
// float64 reference on the dequantized inputs, then timing at the paper's shapes.
//
// Inputs: N(0,1) floats quantized per tensor with fa::quantize_e4m3 (descale =
// amax / 448); the reference and the standard below read the dequantized values,
// the kernel the codes and the descales.
// Pass rule: O max abs error <= 2 x the max abs error of a standard in FP8
// precision + 4e-3, LSE max abs error <= 1e-3 + 2 x the standard's (the sweep's
// FP8 rule, docs/MEASUREMENT.md). The standard: scores from the codes as the FP8
// tensor cores add them up (check/fp8_mma.h) times the descales, P = exp(s - max) rounded
// to e4m3 (no scale: P is in [0, 1], as the kernel feeds it to the tensor cores;
// normalizing first would push long rows' P into e4m3's subnormals and loosen the
// bound), float32 sum l of the unrounded exponentials, float32 P V / l, O
// rounded to bf16. Errors are taken on sampled rows (every row of small shapes).
// Also checked: every O element written and finite, every LSE written (O and LSE
// poisoned with 0xff first), rows that see no key give O = 0 and LSE = -inf.
//
// Usage: fp8_check [--seed N] [--no-check] [--time] [--time-head-dim=D] [--fault] [--cpu-selftest]
//                   [--variant=NAME[,NAME...]]
//   (default)        the correctness cases
//   --time           also time the paper shapes (b * seqlen = 16384, heads = 2048 / d):
//                    the V^T pre-pass, attention, and both, L2 flushed before each sample
//   --time-head-dim=D  time only head dim D's shapes
//   --variant=NAME   the attention kernel's variants (fa3_fp8_variants.cuh: base, two, wide,
//                    poly4, poly2, tv, split, vs, vm1, vm2, vm4; a comma list) or all: the checks run
//                    for each, and the timing prints one row per variant per shape (default base:
//                    always the pre-pass; tv: always V transposed in the kernel, no pre-pass;
//                    vs: V^T made by the kernel's producer warps, no pre-pass; its
//                    vt_ms is the pre-pass it does not run, and its attn_ms the kernel
//                    with the words the previous launch left complete, so V^T is not
//                    made again: only total_ms, which zeroes them first, is vs's forward;
//                    vm1, vm2, vm4: the same V^T made by a kernel of its own on 1, 2 or 4
//                    SMs beside the attention kernel, timed as vs)
//   --fault          plant faults (V descale applied twice; K descale dropped) and
//                    show the check catches each: exit 0 only if all are caught
//   --cpu-selftest   no GPU: the fragment permutation, and a host emulation of the
//                    kernel's data movement (V^T order, P fragments, blockwise softmax)
//                    through the same check, clean and with each planted fault
// Exit: 0 passed, 1 a failure (or an uncaught fault), 2 usage, 77 no CUDA device.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/e4m3.h"
#include "core/parallel.h"
#include "check/fp8_quant.h"
#include "fa3/fa3_fp8_variants.cuh"
#include "fp8_row_reference.h"
#include "row_errors.h"
#include "standalone_util.h"

namespace {

using fa::standalone::round_to;

struct Shape {
  int batch, heads, heads_kv, seqlen_q, seqlen_k, head_dim;
  bool causal;
  bool per_head = false;  // one descale per (batch, head) instead of per tensor
  // The persistent grid's bound as this many times the device's SMs: more
  // blocks than can be resident at once (as under an SM limit), which the
  // shared V^T's queue must survive (blocks waiting on V^T that only blocks
  // not yet started would make would hang).
  int sms_times = 1;
};

std::string shape_name(const Shape& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "hd%d b%d h%d/%d sq%d sk%d%s%s%s", s.head_dim, s.batch, s.heads, s.heads_kv,
                s.seqlen_q, s.seqlen_k, s.causal ? " causal" : "", s.per_head ? " per-head" : "",
                s.sms_times > 1 ? " grid>SMs" : "");
  return buf;
}

int key_end(const Shape& s, int row) {
  return fa::KeyRange{s.seqlen_q, s.seqlen_k, s.causal}.key_end(row);
}

// Codes and descales of Q, K, V.
struct HostProblem {
  Shape s;
  fa::Fp8Tensor q, k, v;
};

HostProblem make_problem(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto gen = [&](int64_t seqlen, int64_t heads) {
    const fa::BshdShape sh{s.batch, seqlen, heads, s.head_dim};
    std::vector<float> x(size_t(sh.elements()));
    for (float& e : x) e = nd(rng);
    return fa::quantize_e4m3(x, sh, s.per_head ? fa::Fp8Scaling::head : fa::Fp8Scaling::tensor);
  };
  HostProblem p{s, gen(s.seqlen_q, s.heads), gen(s.seqlen_k, s.heads_kv), gen(s.seqlen_k, s.heads_kv)};
  return p;
}

// The descale of (b, h) of t, per tensor or per head.
float descale_of(const fa::Fp8Tensor& t, int b, int h) {
  return t.descales[size_t(fa::fp8_group_of(t.shape, t.scaling, 0, b, 0, h))];
}

// One row of the float64 reference and of the FP8-precision standard.
using fa::standalone::RowRef;

RowRef reference_row(const HostProblem& hp, int b, int h, int i) {
  const Shape& s = hp.s;
  const int d = s.head_dim, hk = h / (s.heads / s.heads_kv);
  RowRef r;
  r.o.assign(d, 0.0);
  r.o_std.assign(d, 0.f);
  fa::standalone::Fp8Row row;
  row.keys = key_end(s, i);
  if (row.keys <= 0) {
    r.lse = r.lse_std = -INFINITY;
    return r;
  }
  const size_t kv_at = (size_t(b) * s.seqlen_k * s.heads_kv + hk) * d;
  row.q = &hp.q.codes[((size_t(b) * s.seqlen_q + i) * s.heads + h) * d];
  row.k = &hp.k.codes[kv_at];
  row.v = &hp.v.codes[kv_at];
  row.key_stride = int64_t(s.heads_kv) * d;
  row.head_dim = d;
  row.q_descale = descale_of(hp.q, b, h);
  row.k_descale = descale_of(hp.k, b, hk);
  row.v_descale = descale_of(hp.v, b, hk);
  row.ref_scale = 1.0 / std::sqrt(double(d));
  row.score_scale = float(row.ref_scale) * row.q_descale * row.k_descale;
  const fa::standalone::Fp8RowReference ref = fa::standalone::fp8_row_reference(row);
  r.o = ref.o;
  r.lse = ref.lse;
  r.lse_std = ref.lse_std();
  // fa3's form: exp(s - m) rounded to e4m3 unscaled (as the kernel's P V reads
  // it), O normalized after P V and stored in bf16.
  r.o_std = fa::standalone::fp8_standard_o(
      row, ref, [](float e, float) { return fa::decode_e4m3(fa::encode_e4m3(e)); },
      [](float acc, float l) { return round_to(acc / l, fa::ElemType::bf16); });
  return r;
}

// Every row of a small problem; else the first and last rows, both sides of the
// first block boundaries (block_m 128) and random rows.
std::vector<int> sample_rows(const Shape& s, std::mt19937_64& rng) {
  std::vector<int> rows;
  if (int64_t(s.batch) * s.heads * s.seqlen_q <= 4096) {
    for (int i = 0; i < s.seqlen_q; ++i) rows.push_back(i);
    return rows;
  }
  rows = {0, 1, s.seqlen_q - 1, s.seqlen_q - 2};
  for (int b = 128; b < s.seqlen_q && b <= 3 * 128; b += 128) rows.insert(rows.end(), {b - 1, b});
  std::uniform_int_distribution<int> ud(0, s.seqlen_q - 1);
  for (int i = 0; i < 24; ++i) rows.push_back(ud(rng));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

struct Errors {
  bool pass = false;
  std::string why;
  double o_err = 0, std_err = 0, o_tol = 0, lse_err = 0, lse_std_err = 0, lse_tol = 0;
};

// O (bf16 bits, BSHD) and LSE against the reference under the pass rule.
Errors compare(const HostProblem& hp, const std::vector<uint16_t>& o, const std::vector<float>& lse, uint64_t seed) {
  const Shape& s = hp.s;
  const int d = s.head_dim;
  Errors e;
  for (size_t i = 0; i < o.size(); ++i)
    if (!std::isfinite(fa::standalone::from_bits(o[i], fa::ElemType::bf16))) {
      e.why = "O not finite / not written at element " + std::to_string(i);
      return e;
    }
  for (size_t i = 0; i < lse.size(); ++i)
    if (std::isnan(lse[i]) || lse[i] == INFINITY) {
      e.why = "LSE NaN / not written at " + std::to_string(i);
      return e;
    }
  // The rows to compare, drawn in (batch, head) order as before; their
  // references computed on every core (the float64 rows are most of a large
  // case's time), then compared in that order.
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  struct At {
    int b, h, i;
  };
  std::vector<At> at;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i : sample_rows(s, rng)) at.push_back({b, h, i});
  std::vector<RowRef> refs(at.size());
  fa::parallel_for(int64_t(at.size()), 0, [&](int64_t t, int) {
    const At& x = at[size_t(t)];
    refs[size_t(t)] = reference_row(hp, x.b, x.h, x.i);
  });
  for (size_t t = 0; t < at.size(); ++t) {
    const int b = at[t].b, h = at[t].h, i = at[t].i;
    const float kl = lse[(size_t(b) * s.heads + h) * s.seqlen_q + i];
    const size_t row_at = ((size_t(b) * s.seqlen_q + i) * s.heads + h) * d;
    if (!fa::standalone::fold_row_errors(e, refs[t], kl, i, d, [&](int c) {
          return fa::standalone::from_bits(o[row_at + c], fa::ElemType::bf16);
        }))
      return e;
  }
  e.o_tol = 2 * e.std_err + 4e-3;
  e.lse_tol = 1e-3 + 2 * e.lse_std_err;
  e.pass = e.o_err <= e.o_tol && e.lse_err <= e.lse_tol;
  if (!e.pass) e.why = "error over tolerance";
  return e;
}

// --- Faults the check must catch -------------------------------------------------
// v_unpermuted only in the host emulation (--cpu-selftest): V^T in plain key
// order while P keeps the fragment order.
enum class Fault { none, v_descale_twice, k_descale_dropped, v_unpermuted };
const char* fault_name(Fault f) {
  switch (f) {
    case Fault::none: return "none";
    case Fault::v_descale_twice: return "v_descale_twice";
    case Fault::k_descale_dropped: return "k_descale_dropped";
    case Fault::v_unpermuted: return "v_unpermuted";
  }
  return "?";
}

// --- GPU run --------------------------------------------------------------------
template <typename T>
T* to_device(const std::vector<T>& x) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, std::max<size_t>(1, x.size()) * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Variant v's workspaces for p in one allocation, every byte set to `fill`: V^T's
// synchronisation words (vs), then the split tail's (split, vs), neighbours so
// that fp8_vt_sync_reset clears both with one memset. Returns the allocation
// (nullptr: none).
void* attach_workspaces(fa::Fp8FwdParams& p, fa::Fp8Variant v, int fill) {
  const int64_t sync = fa::fp8_variant_vt_sync_bytes(p, v), split = fa::fp8_variant_split_bytes(p, v);
  if (sync + split == 0) return nullptr;
  char* ws = nullptr;
  CHECK_CUDA(cudaMalloc(&ws, size_t(sync + split)));
  CHECK_CUDA(cudaMemset(ws, fill, size_t(sync + split)));
  p.vt_sync = sync > 0 ? ws : nullptr;
  p.split_ws = split > 0 ? ws + sync : nullptr;
  return ws;
}

// Runs the kernel on hp (poisoned outputs), copies O and LSE back. A planted
// fault changes what the kernel is given: the V descale squared (as if applied
// twice) or the K descale replaced by 1 (as if forgotten).
Errors run_case(const HostProblem& hp, uint64_t seed, Fault fault, fa::Fp8Variant variant = fa::Fp8Variant::base) {
  const Shape& s = hp.s;
  fa::Fp8FwdParams p;
  p.batch = s.batch, p.heads = s.heads, p.heads_kv = s.heads_kv;
  p.seqlen_q = s.seqlen_q, p.seqlen_k = s.seqlen_k, p.head_dim = s.head_dim;
  p.causal = s.causal;
  p.softmax_scale = float(1.0 / std::sqrt(double(s.head_dim)));
  p.set_contiguous_strides();
  if (s.sms_times > 1) {
    int sms = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    p.num_sms = s.sms_times * sms;
  }
  // Descales laid out as fp8_quant.h gives them: [1], or [batch, heads(_kv)].
  std::vector<float> qd = hp.q.descales, kd = hp.k.descales, vd = hp.v.descales;
  if (fault == Fault::v_descale_twice)
    for (float& x : vd) x *= x;
  if (fault == Fault::k_descale_dropped) std::fill(kd.begin(), kd.end(), 1.f);
  std::vector<float> all = qd;
  all.insert(all.end(), kd.begin(), kd.end());
  all.insert(all.end(), vd.begin(), vd.end());
  float* descales = to_device(all);
  const int64_t qh = s.per_head ? 1 : 0, kvh = s.per_head ? 1 : 0;
  p.q_descale = {descales, qh * s.heads, qh};
  p.k_descale = {descales + qd.size(), kvh * s.heads_kv, kvh};
  p.v_descale = {descales + qd.size() + kd.size(), kvh * s.heads_kv, kvh};
  uint8_t* dq = to_device(hp.q.codes);
  uint8_t* dk = to_device(hp.k.codes);
  uint8_t* dv = to_device(hp.v.codes);
  uint8_t* dvt = nullptr;
  uint16_t* d_o = nullptr;
  float* dlse = nullptr;
  const size_t no = hp.q.codes.size(), nlse = size_t(s.batch) * s.heads * s.seqlen_q;
  CHECK_CUDA(cudaMalloc(&dvt, fa::fp8_vt_bytes(p)));
  CHECK_CUDA(cudaMalloc(&d_o, no * 2));
  CHECK_CUDA(cudaMalloc(&dlse, nlse * 4));
  CHECK_CUDA(cudaMemset(d_o, 0xFF, no * 2));  // NaN in bf16
  CHECK_CUDA(cudaMemset(dlse, 0xFF, nlse * 4));
  CHECK_CUDA(cudaMemset(dvt, 0xFF, fa::fp8_vt_bytes(p)));  // NaN codes: the pre-pass must write it all
  p.q = dq, p.k = dk, p.v = dv, p.vt = dvt, p.o = d_o, p.lse = dlse;
  // The split and vs variants' workspaces poisoned too (NaN partials; counts and
  // V^T words the launch must zero).
  void* ws = attach_workspaces(p, variant, 0xFF);
  Errors e;
  if (const char* why = fa::fa3_fp8_unsupported(p, variant)) {
    e.why = std::string("unsupported: ") + why;
  } else {
    const cudaError_t err = fa::fa3_fp8_fwd(p, variant, nullptr);
    if (err != cudaSuccess) {
      e.why = std::string("launch failed: ") + cudaGetErrorString(err);
    } else {
      CHECK_CUDA(cudaDeviceSynchronize());
      std::vector<uint16_t> o(no);
      std::vector<float> lse(nlse);
      CHECK_CUDA(cudaMemcpy(o.data(), d_o, no * 2, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(lse.data(), dlse, nlse * 4, cudaMemcpyDeviceToHost));
      e = compare(hp, o, lse, seed);
    }
  }
  for (void* x : {(void*)dq, (void*)dk, (void*)dv, (void*)dvt, (void*)d_o, (void*)dlse, (void*)descales, ws})
    cudaFree(x);
  return e;
}

std::vector<Shape> check_shapes() {
  // A grid of 4 x the SMs, with more V^T blocks (2 x 4 pairs x 32) than SMs:
  // hd128's tile is the one whose producer warps make V^T (vs).
  std::vector<Shape> out = {{2, 16, 4, 4096, 4096, 128, false, false, 4}, {2, 16, 4, 4096, 4096, 128, true, false, 4}};
  for (int d : {64, 128, 256}) {
    // batch, heads, heads_kv, seqlen_q, seqlen_k, head_dim, causal
    const Shape shapes[] = {
        {2, 4, 4, 256, 256, d, false}, {2, 4, 4, 256, 256, d, true},  // whole blocks
        {1, 8, 2, 1000, 1000, d, false}, {1, 8, 2, 1000, 1000, d, true},  // GQA, ragged last block
        {2, 4, 1, 333, 777, d, false}, {2, 4, 1, 333, 777, d, true},  // MQA, sq < sk
        {1, 4, 2, 777, 333, d, true},                                 // sq > sk causal: rows with no key
        {3, 2, 2, 1, 1, d, true},      {1, 2, 1, 1, 4097, d, false},   // one row, one key, a long row
        {1, 2, 2, 3000, 3000, d, true},                               // many blocks per row
        {2, 4, 2, 300, 500, d, true, true},                           // per-(batch, head) descales
    };
    out.insert(out.end(), std::begin(shapes), std::end(shapes));
  }
  return out;
}

// --- Timing ---------------------------------------------------------------------
// Codes of uniform(-448, 448): e4m3's whole range.
__global__ void fill_e4m3(uint8_t* x, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = uint8_t(fa::sm90::pack_e4m3x4(fa::standalone::uniform_pm1(i, seed) * 448.f, 0.f, 0.f, 0.f) & 0xFF);
}

int run_timing(uint64_t seed, const std::vector<fa::Fp8Variant>& variants, int head_dim_only) {
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const fa::standalone::L2Flush flush;
  const size_t n_max = size_t(16384) * 2048;  // tokens x heads * head_dim
  uint8_t *dq, *dk, *dv, *dvt;
  uint16_t* d_o;
  float *dlse, *descales;
  CHECK_CUDA(cudaMalloc(&dq, n_max));
  CHECK_CUDA(cudaMalloc(&dk, n_max));
  CHECK_CUDA(cudaMalloc(&dv, n_max));
  CHECK_CUDA(cudaMalloc(&dvt, n_max + size_t(2048) * 64 * 16));  // + padding of seqlen_k to 64
  CHECK_CUDA(cudaMalloc(&d_o, n_max * 2));
  CHECK_CUDA(cudaMalloc(&dlse, size_t(16384) * 64 * 4));
  CHECK_CUDA(cudaMalloc(&descales, 3 * sizeof(float)));
  const float ds[3] = {4.f / 448, 4.f / 448, 1.f / 448};
  CHECK_CUDA(cudaMemcpy(descales, ds, sizeof ds, cudaMemcpyHostToDevice));
  fill_e4m3<<<1024, 256>>>(dq, n_max, seed + 1);
  fill_e4m3<<<1024, 256>>>(dk, n_max, seed + 2);
  fill_e4m3<<<1024, 256>>>(dv, n_max, seed + 3);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("\n%s, L2 flushed (%zu MiB memset) before each sample, median of >= 10 after 3 warm-up runs;\n"
              "TFLOP/s = 4 b h sq sk d / t (causal: half); 'total' = V^T pre-pass (vs: zeroing its words) + attention\n"
              "in one timed span; vs's 'attn' runs with V^T already made\n",
              prop.name, flush.bytes() >> 20);
  std::printf("TIME %4s %6s %6s %5s %5s %-8s %10s %10s %10s %9s %9s\n", "hd", "causal", "seqlen", "batch", "heads",
              "variant", "vt_ms", "attn_ms", "total_ms", "attn_TF/s", "total_TF/s");
  for (int d : {64, 128, 256})
    for (int causal = 0; causal < 2 && (head_dim_only == 0 || d == head_dim_only); ++causal)
      for (int seqlen = 512; seqlen <= 16384; seqlen *= 2) {
        fa::Fp8FwdParams p;
        p.batch = 16384 / seqlen, p.heads = 2048 / d, p.heads_kv = p.heads;
        p.seqlen_q = p.seqlen_k = seqlen, p.head_dim = d, p.causal = causal != 0;
        p.softmax_scale = float(1.0 / std::sqrt(double(d)));
        p.set_contiguous_strides();
        p.q_descale = {descales, 0, 0};
        p.k_descale = {descales + 1, 0, 0};
        p.v_descale = {descales + 2, 0, 0};
        p.q = dq, p.k = dk, p.v = dv, p.vt = dvt, p.o = d_o, p.lse = dlse;
        if (const char* why = fa::fa3_fp8_unsupported(p)) {
          std::printf("TIME hd%d unsupported: %s\n", d, why);
          return 1;
        }
        using fa::standalone::time_launches;
        using fa::standalone::tflops;
        // The pre-pass does not depend on the variant: timed once per shape.
        const auto vt = time_launches([&](cudaStream_t st) { return int(fa::transpose_v(p, st)); }, flush.ptr(),
                                      flush.bytes());
        const double flops = fa::standalone::forward_flops(p.batch, p.heads, seqlen, seqlen, d, causal != 0);
        for (fa::Fp8Variant v : variants) {
          void* ws = attach_workspaces(p, v, 0);
          const auto at = time_launches([&](cudaStream_t st) { return int(fa::fa3_fp8_attention(p, v, st)); },
                                        flush.ptr(), flush.bytes());
          const auto tt = time_launches([&](cudaStream_t st) { return int(fa::fa3_fp8_fwd(p, v, st)); }, flush.ptr(),
                                        flush.bytes());
          if (vt.samples == 0 || at.samples == 0 || tt.samples == 0) {
            std::printf("TIME hd%d seqlen %d variant %s: a launch failed\n", d, seqlen, fa::fp8_variant_name(v));
            return 1;
          }
          std::printf("TIME %4d %6d %6d %5d %5d %-8s %10.4f %10.4f %10.4f %9.1f %9.1f\n", d, causal, seqlen, p.batch,
                      p.heads, fa::fp8_variant_name(v), vt.median_ms, at.median_ms, tt.median_ms,
                      tflops(flops, at.median_ms), tflops(flops, tt.median_ms));
          std::fflush(stdout);
          CHECK_CUDA(cudaFree(ws));
          p.split_ws = p.vt_sync = nullptr;
        }
      }
  for (void* x : {(void*)dq, (void*)dk, (void*)dv, (void*)dvt, (void*)d_o, (void*)dlse, (void*)descales})
    cudaFree(x);
  return 0;
}

// --- CPU self-test ------------------------------------------------------------------
// The kernel's data movement emulated on the host: V^T in e4m3_key_order, P's
// A fragment gathered per thread with p_src_index and read back through the PTX
// A-operand layout, blockwise online softmax with e4m3 P. Its O must pass the
// same rule the GPU kernel is held to; a wrong permutation fails it.
std::vector<uint16_t> emulate_kernel(const HostProblem& hp, std::vector<float>& lse, Fault fault, int bn) {
  const Shape& s = hp.s;
  const int d = s.head_dim, svt = fa::fp8_vt_seqlen(s.seqlen_k), group = s.heads / s.heads_kv;
  std::vector<uint16_t> o(hp.q.codes.size());
  lse.assign(size_t(s.batch) * s.heads * s.seqlen_q, 0.f);
  for (int b = 0; b < s.batch; ++b)
    for (int hk = 0; hk < s.heads_kv; ++hk) {
      // V^T as transpose_v writes it.
      std::vector<uint8_t> vt(size_t(d) * svt, 0);
      for (int c = 0; c < d; ++c)
        for (int kk = 0; kk < svt; ++kk) {
          const int key = fault == Fault::v_unpermuted ? kk : fa::sm90::e4m3_key_order(kk);
          if (key < s.seqlen_k) vt[size_t(c) * svt + kk] = hp.v.codes[((size_t(b) * s.seqlen_k + key) * s.heads_kv + hk) * d + c];
        }
      for (int h = hk * group; h < (hk + 1) * group; ++h)
        for (int row = 0; row < s.seqlen_q; ++row) {
          float vd = descale_of(hp.v, b, hk), kd = descale_of(hp.k, b, hk);
          if (fault == Fault::v_descale_twice) vd *= vd;
          if (fault == Fault::k_descale_dropped) kd = 1.f;
          const float scale = float(1.0 / std::sqrt(double(d))) * descale_of(hp.q, b, h) * kd;
          const int end = key_end(s, row);
          float m = -INFINITY, l = 0.f;
          std::vector<float> acc(d, 0.f);
          const uint8_t* q = &hp.q.codes[((size_t(b) * s.seqlen_q + row) * s.heads + h) * d];
          for (int n0 = 0; n0 < end; n0 += bn) {
            // S for this row's bn columns: thread t of the quad holds cols 8j + 2t + e,
            // accumulator element 4j + 2 * (row half) + e; take row half 0.
            float sc[4][256 / 2];  // [t][element], elements of row half 1 unused; bn <= 256
            float mx = m;
            std::vector<float> srow(bn);
            for (int j = 0; j < bn; ++j) {
              float acc_s = 0.f;
              const int key = n0 + j;
              if (key < end) {
                const uint8_t* k = &hp.k.codes[((size_t(b) * s.seqlen_k + key) * s.heads_kv + hk) * d];
                for (int c = 0; c < d; ++c) acc_s += fa::decode_e4m3(q[c]) * fa::decode_e4m3(k[c]);
                srow[j] = acc_s;
                mx = std::max(mx, acc_s);
              } else {
                srow[j] = -INFINITY;
              }
            }
            const float alpha = std::exp((m - mx) * scale);
            m = mx;
            l *= alpha;
            for (float& x : acc) x *= alpha;
            for (int t = 0; t < 4; ++t)
              for (int j = 0; j < bn / 8; ++j)
                for (int e = 0; e < 2; ++e) {
                  const float p = std::exp((srow[8 * j + 2 * t + e] - m) * scale);
                  sc[t][4 * j + e] = p;
                  sc[t][4 * j + 2 + e] = 0.f;
                  l += p;
                }
            // O += P V through the fragments: thread t's register r (row half 0: r = 0, 2),
            // byte i holds A(row, kk = 16 (r / 2) + 4t + i) of step k.
            for (int k = 0; k < bn / 32; ++k)
              for (int t = 0; t < 4; ++t)
                for (int r = 0; r < 4; r += 2)
                  for (int i = 0; i < 4; ++i) {
                    const float p = fa::decode_e4m3(fa::encode_e4m3(sc[t][fa::fa3::p_src_index(k, r, i)]));
                    const int kk = n0 + 32 * k + 16 * (r / 2) + 4 * t + i;
                    if (kk >= svt) continue;  // TMA reads zeros there
                    for (int c = 0; c < d; ++c) acc[c] += p * fa::decode_e4m3(vt[size_t(c) * svt + kk]);
                  }
          }
          for (int c = 0; c < d; ++c)
            o[((size_t(b) * s.seqlen_q + row) * s.heads + h) * d + c] =
                fa::standalone::to_bits(l > 0.f ? acc[c] * vd / l : 0.f, fa::ElemType::bf16);
          lse[(size_t(b) * s.heads + h) * s.seqlen_q + row] = l > 0.f ? m * scale + std::log(l) : -INFINITY;
        }
    }
  return o;
}

int cpu_selftest(uint64_t seed, const std::vector<fa::Fp8Variant>& variants) {
  int failures = 0;
  // e4m3_key_order: a permutation of each group of 32 keys.
  for (int base = 0; base < 128; base += 32) {
    std::vector<int> seen(32, 0);
    for (int kk = base; kk < base + 32; ++kk) {
      const int key = fa::sm90::e4m3_key_order(kk);
      if (key < base || key >= base + 32 || seen[key - base]++) ++failures;
    }
  }
  // p_src_index against the two PTX layouts: the accumulator element it names
  // (row g + 8 * half, col 8j + 2t + e) must sit in the A fragment's row and be
  // the key e4m3_key_order puts at the fragment's k index.
  for (int t = 0; t < 4; ++t)
    for (int k = 0; k < 256 / 32; ++k)
      for (int r = 0; r < 4; ++r)
        for (int i = 0; i < 4; ++i) {
          const int idx = fa::fa3::p_src_index(k, r, i);
          const int j = idx / 4, half = (idx % 4) / 2, e = idx % 2;
          const int col = 8 * j + 2 * t + e;
          const int a_half = r % 2, a_k = 32 * k + 16 * (r / 2) + 4 * t + i;
          if (half != a_half || col != fa::sm90::e4m3_key_order(a_k)) ++failures;
        }
  std::printf("fp8_check --cpu-selftest: fragment permutation %s\n", failures ? "WRONG" : "ok");
  // Reference, standard and the emulated kernel on small problems.
  const Shape shapes[] = {{1, 2, 1, 200, 300, 64, false}, {2, 2, 2, 150, 150, 128, true, true},
                          {1, 2, 1, 100, 500, 128, false}, {1, 2, 1, 70, 40, 256, true}};
  // Once per distinct block_n among the variants (the emulation follows the blocking).
  for (const Shape& s : shapes) {
    const HostProblem hp = make_problem(s, seed);
    std::vector<int> bns;
    for (fa::Fp8Variant v : variants) {
      const int bn = fa::fp8_variant_block_n(v, s.head_dim);
      if (std::find(bns.begin(), bns.end(), bn) != bns.end()) continue;
      bns.push_back(bn);
      for (Fault f : {Fault::none, Fault::v_unpermuted, Fault::v_descale_twice, Fault::k_descale_dropped}) {
        std::vector<float> lse;
        const std::vector<uint16_t> o = emulate_kernel(hp, lse, f, bn);
        const Errors e = compare(hp, o, lse, seed);
        const bool ok = f == Fault::none ? e.pass : !e.pass;  // every planted fault must be caught
        if (!ok) ++failures;
        std::printf("  %-40s block_n %3d emulated, fault %-18s o_err %.2e tol %.2e (std %.2e) lse_err %.2e tol %.2e  %s\n",
                    shape_name(s).c_str(), bn, fault_name(f), e.o_err, e.o_tol, e.std_err, e.lse_err, e.lse_tol,
                    ok ? (f == Fault::none ? "pass" : "caught") : "FAIL");
      }
    }
  }
  std::printf("fp8_check --cpu-selftest: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 0;
  bool check = true, timing = false, fault = false, selftest = false;
  std::vector<fa::Fp8Variant> variants = {fa::Fp8Variant::base};
  int time_head_dim = 0;  // 0: every head dim
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--variant=", 0) == 0) {
      variants.clear();
      std::string list = a.substr(10) + ",";
      for (size_t pos; (pos = list.find(',')) != std::string::npos; list.erase(0, pos + 1)) {
        const std::string name = list.substr(0, pos);
        bool known = false;
        for (fa::Fp8Variant v : fa::kFp8Variants)
          if (name == "all" || name == fa::fp8_variant_name(v)) variants.push_back(v), known = true;
        if (!known) {
          std::string names;  // from the variant table, so the message cannot go stale
          for (fa::Fp8Variant v : fa::kFp8Variants) names += std::string(fa::fp8_variant_name(v)) + ", ";
          std::fprintf(stderr, "fp8_check: unknown variant '%s' (%sall)\n", name.c_str(), names.c_str());
          return 2;
        }
      }
    } else if (a.rfind("--time-head-dim=", 0) == 0) {
      time_head_dim = std::atoi(a.c_str() + 16);
      if (time_head_dim != 64 && time_head_dim != 128 && time_head_dim != 256) {
        std::fprintf(stderr, "fp8_check: --time-head-dim must be 64, 128 or 256\n");
        return 2;
      }
    } else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
    else if (a == "--no-check") check = false;
    else if (a == "--time") timing = true;
    else if (a == "--fault") fault = true;
    else if (a == "--cpu-selftest") selftest = true;
    else {
      std::fprintf(stderr,
                   "usage: fp8_check [--seed N] [--no-check] [--time] [--time-head-dim=D] [--fault] [--cpu-selftest]\n"
                   "                 [--variant=NAME[,NAME...]|all]\n");
      return 2;
    }
  }
  if (seed == 0) seed = std::random_device{}() | 1;
  if (selftest) return cpu_selftest(seed, variants);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("fp8_check: no CUDA device, skipped\n");
    return 77;
  }
  // Line-buffered, so that a run killed by a time limit (a hung kernel) keeps
  // its seed and every finished case in a log file.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("fp8_check: seed %llu (replay with --seed)\n", (unsigned long long)seed);

  int failures = 0;
  if (fault) {
    // Each fault on a few shapes; caught if some shape fails the check.
    const Shape shapes[] = {{1, 4, 2, 300, 300, 128, true}, {1, 4, 4, 256, 256, 64, false},
                            {2, 2, 1, 200, 500, 256, false, true}};
    for (Fault f : {Fault::v_descale_twice, Fault::k_descale_dropped}) {
      bool caught = false;
      for (const Shape& s : shapes) {
        const HostProblem hp = make_problem(s, seed);
        const Errors e = run_case(hp, seed, f);
        caught |= !e.pass;
        std::printf("FAULT %-18s %-34s o_err %.2e tol %.2e lse_err %.2e tol %.2e  %s\n", fault_name(f),
                    shape_name(s).c_str(), e.o_err, e.o_tol, e.lse_err, e.lse_tol, e.pass ? "not caught" : "caught");
      }
      if (!caught) ++failures;
    }
    std::printf("fp8_check --fault: %s\n", failures ? "a fault went UNCAUGHT" : "every fault caught");
    return failures ? 1 : 0;
  }

  if (check) {
    std::printf("%-36s %-8s %10s %10s %10s %10s %10s  %s\n", "shape", "variant", "o_err", "o_tol", "std_err",
                "lse_err", "lse_tol", "result");
    uint64_t case_seed = seed;
    int ran = 0;
    for (const Shape& s : check_shapes()) {
      case_seed = case_seed * 6364136223846793005ull + 1442695040888963407ull;
      const HostProblem hp = make_problem(s, case_seed);
      for (fa::Fp8Variant v : variants) {
        const Errors e = run_case(hp, case_seed, Fault::none, v);
        ++ran;
        if (!e.pass) ++failures;
        std::printf("%-36s %-8s %10.2e %10.2e %10.2e %10.2e %10.2e  %s%s%s (seed %llu)\n", shape_name(s).c_str(),
                    fa::fp8_variant_name(v), e.o_err, e.o_tol, e.std_err, e.lse_err, e.lse_tol,
                    e.pass ? "PASS" : "FAIL", e.pass ? "" : ": ", e.why.c_str(), (unsigned long long)case_seed);
        std::fflush(stdout);
      }
    }
    std::printf("fp8_check: %d cases, %d failed\n", ran, failures);
  }
  if (timing && run_timing(seed, variants, time_head_dim) != 0) ++failures;
  return failures ? 1 : 0;
}
