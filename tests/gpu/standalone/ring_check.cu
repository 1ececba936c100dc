// ring_check: the ring (context-parallel) attention forward (kernels/ring/) on the
// GPUs of one host, one thread driving them all: checked against the float64
// reference, or timed against fa3 on one GPU.
//
//   check  random bf16 inputs (N(0,1), fixed seed) for the whole sequence, dealt to
//          the GPUs in zigzag order; outputs poisoned (NaN) first; then every O and
//          LSE element must be written and finite, and sampled rows of every shard
//          (every row of a small problem; always each chunk's first and last row)
//          must pass the project's bf16 tolerance rule against the float64
//          reference of the whole problem (docs/MEASUREMENT.md, "The tolerance
//          rule": O max abs error <= 2 x a bf16 standard's + 4e-3, LSE's
//          <= 1e-3 + 2 x the standard's).
//   time   per-GPU inputs made on the device; L2 flushed on every GPU, 3 warm-ups,
//          then the median of >= 10 samples of the whole ring forward (GPU 0's
//          events around it: the other GPUs start on GPU 0's start event and
//          GPU 0 waits for their ends); per GPU and step, the compute and
//          communication intervals (--csv); fa3 on one GPU timed the same way at
//          the per-GPU shape and, where it fits, on the whole problem on GPU 0.
//
// Usage: ring_check [check|time] [--gpus N] [--seqlen-per-gpu S] [--batch B]
//          [--heads H] [--kv-heads HK] [--head-dim D] [--causal] [--seed N]
//          [--rows R] [--fault lse-sign|skip-step] [--block MxN] [--comm-sms K]
//          [--nccl-lib PATH] [--csv PATH] [--samples N] [--no-whole]
// Exit: 0 passed (time: ran), 1 a check failed, 2 usage, 3 a CUDA error,
// 77 not enough CUDA devices, no NCCL, or no fa3 bf16 forward of that head_dim and
// tile in this build (reported as skipped).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "check/inputs.h"
#include "check/inputs_gpu.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "reference/reference.h"
#include "ring/nccl_loader.h"
#include "ring/ring_forward.h"
#include "ring/zigzag.h"
#include "standalone_util.h"

namespace {

using fa::ring::RingFault;
using fa::ring::RingForward;
using fa::ring::RingShape;

constexpr int kUsage = 2, kSkip = 77;

struct Options {
  std::string mode = "check";
  int gpus = 2, batch = 1, heads = 16, kv_heads = 0, head_dim = 128;
  int64_t seqlen_per_gpu = 0;  // 0: 2048 for check, 32768 for time
  bool causal = false;
  uint64_t seed = 20261201;
  int64_t rows = 128;  // sampled rows of the whole sequence (check)
  RingFault fault = RingFault::none;
  std::string fault_name = "none";
  int block_m = 128, block_n = 176;
  int comm_sms = 0;  // SMs left to NCCL: 0 measured best on 2 H200s (docs/RING.md)
  std::string nccl_lib, csv;
  int samples = 10;
  bool whole = true;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "ring_check: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: ring_check [check|time] [--gpus N] [--seqlen-per-gpu S] [--batch B] [--heads H]\n"
               "         [--kv-heads HK] [--head-dim D] [--causal] [--seed N] [--rows R]\n"
               "         [--fault lse-sign|skip-step] [--block MxN] [--comm-sms K] [--nccl-lib PATH]\n"
               "         [--csv PATH] [--samples N] [--no-whole]\n");
  std::exit(kUsage);
}

int64_t parse_int(const std::string& flag, const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
    usage(flag + " takes an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  if (i < argc && argv[i][0] != '-') {
    o.mode = argv[i++];
    if (o.mode != "check" && o.mode != "time") usage("mode must be check or time, not '" + o.mode + "'");
  }
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--gpus") o.gpus = int(parse_int(a, value(), 1, 64));
    else if (a == "--seqlen-per-gpu") o.seqlen_per_gpu = parse_int(a, value(), 2, int64_t(1) << 30);
    else if (a == "--batch") o.batch = int(parse_int(a, value(), 1, 1 << 16));
    else if (a == "--heads") o.heads = int(parse_int(a, value(), 1, 1 << 12));
    else if (a == "--kv-heads") o.kv_heads = int(parse_int(a, value(), 1, 1 << 12));
    else if (a == "--head-dim") o.head_dim = int(parse_int(a, value(), 8, 256));
    else if (a == "--causal") o.causal = true;
    else if (a == "--seed") o.seed = uint64_t(parse_int(a, value(), 0, INT64_MAX));
    else if (a == "--rows") o.rows = parse_int(a, value(), 4, int64_t(1) << 24);
    else if (a == "--samples") o.samples = int(parse_int(a, value(), 10, 10000));
    else if (a == "--comm-sms") o.comm_sms = int(parse_int(a, value(), 0, 64));
    else if (a == "--nccl-lib") o.nccl_lib = value();
    else if (a == "--csv") o.csv = value();
    else if (a == "--no-whole") o.whole = false;
    else if (a == "--fault") {
      o.fault_name = value();
      if (o.fault_name == "lse-sign") o.fault = RingFault::negate_lse;
      else if (o.fault_name == "skip-step") o.fault = RingFault::skip_last_step;
      else usage("--fault takes lse-sign or skip-step, not '" + o.fault_name + "'");
    } else if (a == "--block") {
      const std::string v = value();
      const size_t x = v.find('x');
      if (x == std::string::npos) usage("--block takes MxN (e.g. 128x176), not '" + v + "'");
      o.block_m = int(parse_int(a, v.substr(0, x).c_str(), 1, 1024));
      o.block_n = int(parse_int(a, v.substr(x + 1).c_str(), 1, 1024));
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  if (o.heads % o.kv_heads != 0) usage("--heads must be a multiple of --kv-heads");
  if (o.seqlen_per_gpu == 0) o.seqlen_per_gpu = o.mode == "check" ? 2048 : 32768;
  if (o.seqlen_per_gpu % 2 != 0) usage("--seqlen-per-gpu must be even (two zigzag chunks per GPU)");
  if (o.mode == "time" && o.fault != RingFault::none) usage("--fault belongs to check");
  return o;
}

RingShape ring_shape(const Options& o) {
  RingShape s;
  s.gpus = o.gpus;
  s.batch = o.batch;
  s.heads = o.heads;
  s.heads_kv = o.kv_heads;
  s.seqlen_per_gpu = o.seqlen_per_gpu;
  s.head_dim = o.head_dim;
  s.causal = o.causal;
  s.comm_sms = o.comm_sms;
  return s;
}

// The whole sequence as one problem (what the reference and the FLOP count see).
fa::AttnProblem whole_problem(const Options& o) {
  fa::AttnProblem p;
  p.batch = o.batch;
  p.heads = o.heads;
  p.heads_kv = o.kv_heads;
  p.seqlen_q = p.seqlen_k = int(o.seqlen_per_gpu * o.gpus);
  p.head_dim = o.head_dim;
  p.causal = o.causal;
  p.dtype = fa::DType::bf16;
  return p;
}

fa::AttnProblem per_gpu_problem(const Options& o) {
  fa::AttnProblem p = whole_problem(o);
  p.seqlen_q = p.seqlen_k = int(o.seqlen_per_gpu);
  return p;
}

std::string case_name(const Options& o) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "gpus%d b%d h%d/%d s%lld/gpu d%d %s%s%s", o.gpus, o.batch, o.heads, o.kv_heads,
                (long long)o.seqlen_per_gpu, o.head_dim, o.causal ? "causal" : "non-causal",
                o.fault == RingFault::none ? "" : " fault=", o.fault == RingFault::none ? "" : o.fault_name.c_str());
  return buf;
}

// fa3's bf16 forward at the head dim and tile asked for, from this build's table.
const fa::GpuKernelEntry* find_fa3(const Options& o) {
  for (const auto& e : fa::gpu_kernel_entries())
    if (std::strcmp(e.family, "fa3") == 0 && std::strcmp(e.pass, "fwd") == 0 && e.dtype == fa::ElemType::bf16 &&
        e.head_dim == o.head_dim && e.block_m == o.block_m && e.block_n == o.block_n)
      return &e;
  return nullptr;
}

// One GPU's device tensors and its compute stream.
struct Shard {
  int device = 0;
  cudaStream_t stream = nullptr;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float* lse = nullptr;
  int64_t q_elems = 0, kv_elems = 0, lse_elems = 0;
  fa::ring::GpuShard view() const { return {q, k, v, o, lse}; }
};

std::vector<Shard> make_shards(const Options& o) {
  std::vector<Shard> shards(size_t(o.gpus));
  for (int r = 0; r < o.gpus; ++r) {
    Shard& s = shards[size_t(r)];
    s.device = r;
    s.q_elems = int64_t(o.batch) * o.seqlen_per_gpu * o.heads * o.head_dim;
    s.kv_elems = int64_t(o.batch) * o.seqlen_per_gpu * o.kv_heads * o.head_dim;
    s.lse_elems = int64_t(o.batch) * o.heads * o.seqlen_per_gpu;
    CHECK_CUDA(cudaSetDevice(r));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&s.q, s.q_elems * 2));
    CHECK_CUDA(cudaMalloc(&s.k, s.kv_elems * 2));
    CHECK_CUDA(cudaMalloc(&s.v, s.kv_elems * 2));
    CHECK_CUDA(cudaMalloc(&s.o, s.q_elems * 2));
    CHECK_CUDA(cudaMalloc(&s.lse, s.lse_elems * sizeof(float)));
  }
  return shards;
}

std::vector<fa::ring::GpuShard> views(const std::vector<Shard>& shards) {
  std::vector<fa::ring::GpuShard> out;
  for (const Shard& s : shards) out.push_back(s.view());
  return out;
}
std::vector<cudaStream_t> streams_of(const std::vector<Shard>& shards) {
  std::vector<cudaStream_t> out;
  for (const Shard& s : shards) out.push_back(s.stream);
  return out;
}

// NCCL and one communicator per GPU (ncclCommInitAll: one process, ranks = GPUs 0..N-1).
struct Comms {
  std::unique_ptr<fa::ring::NcclLibrary> nccl;
  std::vector<fa::ring::NcclComm> comms;
  ~Comms() {
    for (auto c : comms) nccl->comm_destroy(c);
  }
};

// With one GPU nothing is opened. Exits 77 when NCCL cannot be opened: the ring
// family is unavailable here, which is a skip, not a failure.
void open_comms(const Options& o, Comms* c) {
  if (o.gpus == 1) return;
  // fa3's grid leaves comm_sms SMs to NCCL; cap NCCL's CTAs to fit there (a
  // setting already in the environment wins). Read when NCCL creates a communicator.
  if (o.comm_sms > 0) setenv("NCCL_MAX_CTAS", std::to_string(o.comm_sms).c_str(), 0);
  std::string why;
  c->nccl = fa::ring::NcclLibrary::open(o.nccl_lib, &why);
  if (!c->nccl) {
    std::fprintf(stderr, "ring_check: %s\n", why.c_str());
    std::exit(kSkip);
  }
  std::vector<int> devs(size_t(o.gpus));
  for (int r = 0; r < o.gpus; ++r) devs[size_t(r)] = r;
  c->comms.assign(size_t(o.gpus), nullptr);
  const fa::ring::NcclResult res = c->nccl->comm_init_all(c->comms.data(), o.gpus, devs.data());
  if (res != fa::ring::kNcclSuccess) {
    c->comms.clear();
    std::fprintf(stderr, "ring_check: %s\n", c->nccl->error("ncclCommInitAll", res).c_str());
    std::exit(3);
  }
  const char* ctas = std::getenv("NCCL_MAX_CTAS");
  std::printf("NCCL %d from %s; %d communicators; NCCL_MAX_CTAS=%s\n", c->nccl->version(), c->nccl->path().c_str(),
              o.gpus, ctas ? ctas : "(unset)");
}

uint16_t bf16_bits(float x) { return fa::standalone::to_bits(x, fa::ElemType::bf16); }
float bf16_value(uint16_t b) { return fa::standalone::from_bits(b, fa::ElemType::bf16); }

// Rows of `src` (a whole-sequence BSHD tensor with `heads` heads) that GPU `gpu`
// holds, in its local order, as bf16 bits.
std::vector<uint16_t> shard_rows(const std::vector<float>& src, const fa::ring::Zigzag& z, int gpu, int batch,
                                 int heads, int d) {
  const int64_t row_elems = int64_t(heads) * d, rows = z.rows_per_gpu(), len = z.seqlen();
  std::vector<uint16_t> out(size_t(batch * rows * row_elems));
  for (int b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i) {
      const float* from = &src[size_t((b * len + z.global_row(gpu, i)) * row_elems)];
      uint16_t* to = &out[size_t((b * rows + i) * row_elems)];
      for (int64_t e = 0; e < row_elems; ++e) to[e] = bf16_bits(from[e]);
    }
  return out;
}

// Rows every check holds: each zigzag chunk's first and last row (where a shard's
// halves and the causal diagonal meet), and seeded samples with their block edges.
std::vector<int64_t> check_rows(const Options& o, const fa::AttnProblem& p, const fa::ring::Zigzag& z) {
  std::vector<int64_t> rows = fa::sample_rows(p, o.rows, int(std::min<int64_t>(z.chunk, 1 << 20)), o.seed);
  for (int c = 0; c < 2 * o.gpus; ++c) {
    rows.push_back(int64_t(c) * z.chunk);
    rows.push_back(int64_t(c + 1) * z.chunk - 1);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

int run_check(const Options& o, const fa::GpuKernelEntry& fa3, Comms& comms) {
  const fa::AttnProblem p = whole_problem(o);
  const RingShape shape = ring_shape(o);
  const fa::ring::Zigzag z = shape.zigzag();
  std::printf("check %s: whole sequence %d, seed %llu\n", case_name(o).c_str(), p.seqlen_q,
              (unsigned long long)o.seed);

  const fa::HostInputs in = fa::generate_inputs(p, fa::Distribution::normal, o.seed);
  std::vector<Shard> shards = make_shards(o);
  for (int r = 0; r < o.gpus; ++r) {
    Shard& s = shards[size_t(r)];
    CHECK_CUDA(cudaSetDevice(r));
    const auto q = shard_rows(in.q, z, r, o.batch, o.heads, o.head_dim);
    const auto k = shard_rows(in.k, z, r, o.batch, o.kv_heads, o.head_dim);
    const auto v = shard_rows(in.v, z, r, o.batch, o.kv_heads, o.head_dim);
    CHECK_CUDA(cudaMemcpy(s.q, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(s.k, k.data(), k.size() * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(s.v, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
    // Poison: 0xffff is a bf16 NaN and 0xffffffff a float NaN, so an element
    // the ring does not write shows.
    CHECK_CUDA(cudaMemset(s.o, 0xff, s.q_elems * 2));
    CHECK_CUDA(cudaMemset(s.lse, 0xff, s.lse_elems * sizeof(float)));
  }

  std::string why;
  auto ring = RingForward::create(comms.nccl.get(), [&] {
    std::vector<int> d;
    for (int r = 0; r < o.gpus; ++r) d.push_back(r);
    return d;
  }(), comms.comms, shape, fa3, &why);
  if (!ring) {
    std::fprintf(stderr, "ring_check: %s\n", why.c_str());
    return kUsage;
  }
  why = ring->enqueue(views(shards), streams_of(shards), o.fault);
  if (!why.empty()) {
    std::fprintf(stderr, "ring_check: %s\n", why.c_str());
    return 3;
  }
  for (int r = 0; r < o.gpus; ++r) {
    CHECK_CUDA(cudaSetDevice(r));
    CHECK_CUDA(cudaStreamSynchronize(shards[size_t(r)].stream));
  }

  // Every element back, checked for the poison, and placed in the whole sequence.
  fa::HostOutputs out;
  const int64_t len = z.seqlen(), rows = z.rows_per_gpu();
  out.o.assign(size_t(o.batch * len * o.heads * o.head_dim), NAN);
  out.lse.assign(size_t(o.batch * o.heads * len), NAN);
  int64_t unwritten = 0;
  for (int r = 0; r < o.gpus; ++r) {
    const Shard& s = shards[size_t(r)];
    CHECK_CUDA(cudaSetDevice(r));
    std::vector<uint16_t> ob(size_t(s.q_elems));
    std::vector<float> lb(size_t(s.lse_elems));
    CHECK_CUDA(cudaMemcpy(ob.data(), s.o, ob.size() * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(lb.data(), s.lse, lb.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const int64_t row_elems = int64_t(o.heads) * o.head_dim;
    for (int b = 0; b < o.batch; ++b)
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t g = z.global_row(r, i);
        for (int64_t e = 0; e < row_elems; ++e) {
          const float x = bf16_value(ob[size_t((b * rows + i) * row_elems + e)]);
          unwritten += !std::isfinite(x);
          out.o[size_t((b * len + g) * row_elems + e)] = x;
        }
        for (int h = 0; h < o.heads; ++h) {
          // Every row sees at least its own key, so -inf is as wrong as NaN.
          const float l = lb[size_t((int64_t(b) * o.heads + h) * rows + i)];
          unwritten += !std::isfinite(l);
          out.lse[size_t((int64_t(b) * o.heads + h) * len + g)] = l;
        }
      }
  }

  const std::vector<int64_t> sample = check_rows(o, p, z);
  const fa::ReferenceOutputs ref = fa::reference_forward(p, in, sample);
  const fa::ErrorMetrics m = fa::compare_outputs(p, out, ref);
  const fa::Tolerances t = fa::tolerances_for(p, in, ref);
  const bool pass = unwritten == 0 && fa::passes(m, t);
  std::printf("| case | rows checked | non-finite | O max abs | O tolerance | LSE max abs | LSE tolerance | result |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %lld of %lld | %lld | %.3g | %.3g | %.3g | %.3g | %s |\n", case_name(o).c_str(),
              (long long)sample.size(), (long long)len, (long long)(unwritten + m.nonfinite), m.o_max_abs,
              t.tolerance, m.lse_max_abs, t.lse_tolerance, pass ? "PASS" : "FAIL");
  for (Shard& s : shards) {
    cudaSetDevice(s.device);
    cudaFree(s.q), cudaFree(s.k), cudaFree(s.v), cudaFree(s.o), cudaFree(s.lse);
    cudaStreamDestroy(s.stream);
  }
  return pass ? 0 : 1;
}

// ---- time -------------------------------------------------------------------

struct Stats {
  double median = -1, p10 = -1, p90 = -1;
  size_t median_index = 0;  // which sample was the median
  int samples = 0;
};

Stats stats_of(const std::vector<double>& ms) {
  Stats s;
  if (ms.empty()) return s;
  std::vector<size_t> order(ms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] < ms[b]; });
  auto q = [&](double f) { return order[size_t(f * double(ms.size() - 1))]; };
  s.median_index = q(0.5);
  s.median = ms[s.median_index];
  s.p10 = ms[q(0.1)];
  s.p90 = ms[q(0.9)];
  s.samples = int(ms.size());
  return s;
}

// Per-GPU totals of one sample's timeline.
struct Overlap {
  double compute_ms = 0;  // sum of the steps' compute intervals
  double comm_ms = 0;     // sum of the transfers' intervals (waiting for the peer included)
  double exposed_ms = 0;  // compute waiting for a transfer: gaps between a step's end and the next's start
};

Overlap overlap_of(const std::vector<fa::ring::StepInterval>& steps) {
  Overlap ov;
  for (size_t s = 0; s < steps.size(); ++s) {
    ov.compute_ms += steps[s].compute_end - steps[s].compute_begin;
    if (steps[s].comm_begin >= 0) ov.comm_ms += steps[s].comm_end - steps[s].comm_begin;
    if (s > 0) ov.exposed_ms += std::max(0.f, steps[s].compute_begin - steps[s - 1].compute_end);
  }
  return ov;
}

int run_time(const Options& o, const fa::GpuKernelEntry& fa3, Comms& comms) {
  const RingShape shape = ring_shape(o);
  const fa::AttnProblem whole = whole_problem(o), local = per_gpu_problem(o);
  std::printf("time %s: whole sequence %d\n", case_name(o).c_str(), whole.seqlen_q);

  std::vector<Shard> shards = make_shards(o);
  const size_t flush_bytes = size_t(256) << 20;  // > 4x the H200's 60 MiB L2
  std::vector<void*> flush(size_t(o.gpus));
  for (int r = 0; r < o.gpus; ++r) {
    Shard& s = shards[size_t(r)];
    CHECK_CUDA(cudaSetDevice(r));
    fa::InputTargets t{s.q, s.k, s.v, nullptr};
    // Each GPU's own seeded values: timing needs random numbers, not the whole
    // sequence's (docs/MEASUREMENT.md: never time on zeros).
    fa::generate_inputs_gpu(local, fa::Distribution::normal, o.seed + uint64_t(r), t);
    CHECK_CUDA(cudaMalloc(&flush[size_t(r)], flush_bytes));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  std::string why;
  std::vector<int> devs;
  for (int r = 0; r < o.gpus; ++r) devs.push_back(r);
  auto ring = RingForward::create(comms.nccl.get(), devs, comms.comms, shape, fa3, &why);
  if (!ring) {
    std::fprintf(stderr, "ring_check: %s\n", why.c_str());
    return kUsage;
  }

  // GPU 0 holds its stream ~2 ms before the start event while the host enqueues
  // every GPU's steps, so host launch time never lands between the events.
  int clock_khz = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const long long hold_cycles = (long long)clock_khz * 2;
  std::vector<cudaEvent_t> ends(size_t(o.gpus));
  cudaEvent_t t0, t1;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaEventCreate(&t0));
  CHECK_CUDA(cudaEventCreate(&t1));
  for (int r = 0; r < o.gpus; ++r) {
    CHECK_CUDA(cudaSetDevice(r));
    CHECK_CUDA(cudaEventCreateWithFlags(&ends[size_t(r)], cudaEventDisableTiming));
  }
  double max_enqueue_ms = 0;
  auto sample = [&](int i) -> double {
    for (int r = 0; r < o.gpus; ++r) {
      CHECK_CUDA(cudaSetDevice(r));
      CHECK_CUDA(cudaMemsetAsync(flush[size_t(r)], i & 0xff, flush_bytes, shards[size_t(r)].stream));
    }
    CHECK_CUDA(cudaSetDevice(0));
    fa::standalone::hold_stream<<<1, 1, 0, shards[0].stream>>>(hold_cycles);
    CHECK_CUDA(cudaEventRecord(t0, shards[0].stream));
    const auto host0 = std::chrono::steady_clock::now();
    for (int r = 1; r < o.gpus; ++r) {
      CHECK_CUDA(cudaSetDevice(r));
      CHECK_CUDA(cudaStreamWaitEvent(shards[size_t(r)].stream, t0, 0));
    }
    const std::string err = ring->enqueue(views(shards), streams_of(shards));
    if (!err.empty()) {
      std::fprintf(stderr, "ring_check: %s\n", err.c_str());
      std::exit(3);
    }
    for (int r = 1; r < o.gpus; ++r) {
      CHECK_CUDA(cudaSetDevice(r));
      CHECK_CUDA(cudaEventRecord(ends[size_t(r)], shards[size_t(r)].stream));
      CHECK_CUDA(cudaSetDevice(0));
      CHECK_CUDA(cudaStreamWaitEvent(shards[0].stream, ends[size_t(r)], 0));
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaEventRecord(t1, shards[0].stream));
    max_enqueue_ms = std::max(
        max_enqueue_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host0).count());
    CHECK_CUDA(cudaEventSynchronize(t1));
    for (int r = 1; r < o.gpus; ++r) {
      CHECK_CUDA(cudaSetDevice(r));
      CHECK_CUDA(cudaStreamSynchronize(shards[size_t(r)].stream));
    }
    CHECK_CUDA(cudaSetDevice(0));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
    return ms;
  };
  for (int i = 0; i < 3; ++i) sample(i);
  std::vector<double> ms;
  std::vector<std::vector<std::vector<fa::ring::StepInterval>>> timelines;
  double total = 0;
  while (int(ms.size()) < o.samples || (ms.size() < 100 && total < 300.0)) {
    ms.push_back(sample(int(ms.size())));
    total += ms.back();
    timelines.push_back(ring->timeline());
  }
  const Stats ring_t = stats_of(ms);
  if (max_enqueue_ms > 1.5)
    std::printf("warning: enqueueing a forward took up to %.2f ms of host time, near the 2 ms hold: "
                "the ring's times may include launch latency\n", max_enqueue_ms);

  // fa3 alone on GPU 0, at the per-GPU shape and (where it fits) the whole problem.
  auto time_single = [&](const fa::AttnProblem& prob) -> fa::standalone::Timing {
    CHECK_CUDA(cudaSetDevice(0));
    const int64_t q_elems = int64_t(prob.batch) * prob.seqlen_q * prob.heads * prob.head_dim;
    const int64_t kv_elems = int64_t(prob.batch) * prob.seqlen_k * prob.heads_kv * prob.head_dim;
    const int64_t bytes = (2 * q_elems + 2 * kv_elems) * 2 + int64_t(prob.batch) * prob.heads * prob.seqlen_q * 4;
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (bytes + (int64_t(1) << 30) > int64_t(free_b)) return {};
    void *q, *k, *v, *out;
    float* lse;
    CHECK_CUDA(cudaMalloc(&q, q_elems * 2));
    CHECK_CUDA(cudaMalloc(&k, kv_elems * 2));
    CHECK_CUDA(cudaMalloc(&v, kv_elems * 2));
    CHECK_CUDA(cudaMalloc(&out, q_elems * 2));
    CHECK_CUDA(cudaMalloc(&lse, int64_t(prob.batch) * prob.heads * prob.seqlen_q * 4));
    fa::generate_inputs_gpu(prob, fa::Distribution::normal, o.seed, fa::InputTargets{q, k, v, nullptr});
    fa::AttnParams p = fa::standalone::problem_params(prob.batch, prob.heads, prob.heads_kv, prob.seqlen_q,
                                                      prob.seqlen_k, prob.head_dim, prob.causal, fa::ElemType::bf16);
    fa::set_contiguous_strides(p);
    p.q = q, p.k = k, p.v = v, p.o = out, p.lse = lse;
    fa::standalone::Timing t;
    if (const char* no = fa3.unsupported(p)) {
      std::printf("fa3 on one GPU: %s\n", no);
    } else {
      t = fa::standalone::time_launches([&](cudaStream_t s) { return fa3.launch(p, s); }, flush[0], flush_bytes);
    }
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(lse);
    return t;
  };
  const fa::standalone::Timing single = time_single(local);
  fa::standalone::Timing single_whole;
  if (o.whole && o.gpus > 1) single_whole = time_single(whole);

  // The median sample's timeline: per-GPU overlap figures and the CSV.
  const auto& tl = timelines[ring_t.median_index];
  const double bytes = double(ring->bytes_sent_per_gpu());
  double comm_ms = 0, exposed_ms = 0, compute_ms = 0;
  for (const auto& steps : tl) {
    const Overlap ov = overlap_of(steps);
    comm_ms += ov.comm_ms / o.gpus;
    exposed_ms += ov.exposed_ms / o.gpus;
    compute_ms += ov.compute_ms / o.gpus;
  }
  if (!o.csv.empty()) {
    FILE* f = std::fopen(o.csv.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "ring_check: cannot write %s\n", o.csv.c_str());
      return kUsage;
    }
    std::fprintf(f, "case,sample,median,total_ms,gpu,step,compute_begin_ms,compute_end_ms,comm_begin_ms,comm_end_ms\n");
    for (size_t i = 0; i < timelines.size(); ++i)
      for (size_t g = 0; g < timelines[i].size(); ++g)
        for (size_t s = 0; s < timelines[i][g].size(); ++s) {
          const auto& x = timelines[i][g][s];
          std::fprintf(f, "\"%s\",%zu,%d,%.4f,%zu,%zu,%.4f,%.4f,%.4f,%.4f\n", case_name(o).c_str(), i,
                       i == ring_t.median_index ? 1 : 0, ms[i], g, s, x.compute_begin, x.compute_end,
                       x.comm_begin, x.comm_end);
        }
    std::fclose(f);
  }

  using fa::standalone::tflops;
  const double agg = tflops(whole.flops(), ring_t.median);
  const double one = single.samples ? tflops(local.flops(), single.median_ms) : NAN;
  const double whole_one = single_whole.samples ? tflops(whole.flops(), single_whole.median_ms) : NAN;
  const double eff = agg / (o.gpus * one);
  const double gbps = comm_ms > 0 ? bytes / (comm_ms * 1e-3) / 1e9 : NAN;
  std::printf("| case | ring ms (p10-p90) | aggregate TFLOP/s | per-GPU TFLOP/s | fa3 1-GPU per-GPU shape ms / TFLOP/s "
              "| scaling efficiency | fa3 1-GPU whole ms / TFLOP/s | NCCL MB/GPU | comm ms/GPU | GB/s | exposed comm ms "
              "| compute ms/GPU |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %.3f (%.3f-%.3f) | %.1f | %.1f | %.3f / %.1f | %.3f | %.3f / %.1f | %.1f | %.3f | %.1f | %.3f "
              "| %.3f |\n",
              case_name(o).c_str(), ring_t.median, ring_t.p10, ring_t.p90, agg, agg / o.gpus, single.median_ms, one,
              eff, single_whole.median_ms, whole_one, bytes / 1e6, comm_ms, gbps, exposed_ms, compute_ms);
  // One line for scripts: key=value.
  std::printf("summary: case=\"%s\" gpus=%d seqlen_per_gpu=%lld causal=%d ring_ms=%.4f samples=%d agg_tflops=%.2f "
              "per_gpu_tflops=%.2f single_ms=%.4f single_tflops=%.2f efficiency=%.4f whole_ms=%.4f "
              "whole_tflops=%.2f nccl_bytes_per_gpu=%.0f comm_ms=%.4f comm_gbps=%.2f exposed_comm_ms=%.4f "
              "comm_sms=%d block=%dx%d\n",
              case_name(o).c_str(), o.gpus, (long long)o.seqlen_per_gpu, o.causal ? 1 : 0, ring_t.median,
              ring_t.samples, agg, agg / o.gpus, single.median_ms, one, eff, single_whole.median_ms, whole_one, bytes,
              comm_ms, gbps, exposed_ms, o.comm_sms, o.block_m, o.block_n);
  for (int r = 0; r < o.gpus; ++r) {
    cudaSetDevice(r);
    cudaFree(flush[size_t(r)]);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const fa::GpuKernelEntry* fa3 = find_fa3(o);
  if (fa3 == nullptr) {
    std::fprintf(stderr,
                 "ring_check: this build has no fa3 bf16 forward at head_dim %d, tile %dx%d (configure with fa3 in "
                 "FA_BENCH_FAMILIES and %d in FA_BENCH_HEAD_DIMS; kernels/fa3/instances.cmake lists the tiles)\n",
                 o.head_dim, o.block_m, o.block_n, o.head_dim);
    return kSkip;  // what this build can run, like a missing device: skipped, not failed
  }
  {
    const std::string bad = ring_shape(o).invalid_reason();
    if (!bad.empty()) usage(bad);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("ring_check: no CUDA device: skipped\n");
    return kSkip;
  }
  for (int r = 0; r < std::min(devices, o.gpus); ++r) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, r) == cudaSuccess)
      std::printf("GPU %d: %s, sm_%d%d, %d SMs\n", r, prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  }
  if (devices < o.gpus) {
    std::printf("ring_check: --gpus %d needs %d CUDA devices, %d here: skipped\n", o.gpus, o.gpus, devices);
    return kSkip;
  }
  try {
    Comms comms;
    open_comms(o, &comms);
    return o.mode == "check" ? run_check(o, *fa3, comms) : run_time(o, *fa3, comms);
  } catch (const std::exception& e) {  // the reference's and the input generator's errors
    std::fprintf(stderr, "ring_check: %s\n", e.what());
    return 3;
  }
}
