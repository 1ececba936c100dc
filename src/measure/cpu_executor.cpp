// The CPU back end: float32 host buffers (values already rounded to the
// problem's dtype), NaN poisoning, host steady_clock timing. Allocations are
// counted against a limit so a huge point becomes an `oom` row, not a swap storm.
#include "measure/cpu_executor.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "common/problem_params.h"
#include "core/errors.h"
#include "core/stop.h"
#include "measure/timing.h"

namespace fa {

int64_t default_cpu_mem_limit() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t(8) << 30;  // unknown: assume 16 GiB RAM
  return int64_t(pages) * page / 2;
}

namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(line.find_first_not_of(" \t", pos + 1));
    }
  }
  return "unknown CPU";
}

class CpuExecutor final : public Executor {
 public:
  CpuExecutor(int threads, int64_t limit) : threads_(threads), limit_(limit) {}

  Backend backend() const override { return Backend::cpu; }

  DeviceInfo info() const override {
    DeviceInfo d;
    d.name = cpu_model();
    d.details["hardware_threads"] = std::to_string(std::thread::hardware_concurrency());
    d.details["threads"] = std::to_string(threads_);
    d.details["cpu_mem_limit_bytes"] = std::to_string(limit_);
    d.details["storage"] = "float32 (values rounded to the problem dtype)";
    return d;
  }

  void prepare(const AttnProblem& p, const HostInputs& in) override {
    release();
    problem_ = p;
    const int64_t o_elems = int64_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
    const int64_t lse_elems = int64_t(p.batch) * p.heads * p.seqlen_q;
    // The backward's dO, dQ (like Q) and dK, dV (like K, V).
    const int64_t grad_elems = in.dout.empty() ? 0 : int64_t(in.dout.size() + in.q.size() + 2 * in.k.size());
    const int64_t bytes =
        int64_t(in.q.size() + in.k.size() + in.v.size() + o_elems + lse_elems + grad_elems) * 4;
    charge(bytes, "inputs and outputs of " + p.describe());
    try {
      q_ = in.q;
      k_ = in.k;
      v_ = in.v;
      o_.assign(size_t(o_elems), 0.f);
      lse_.assign(size_t(lse_elems), 0.f);
      if (!in.dout.empty()) {
        dout_ = in.dout;
        dq_.assign(in.q.size(), 0.f);
        dk_.assign(in.k.size(), 0.f);
        dv_.assign(in.v.size(), 0.f);
      }
    } catch (const std::bad_alloc&) {
      release();
      throw OutOfMemory(fmt::format("host allocation of {} bytes failed for {}", bytes,
                                    p.describe()));
    }
    held_ = bytes;
  }

  AttnParams params() const override {
    AttnParams a = make_params(problem_, ElemType::f32);
    a.q = q_.data();
    a.k = k_.data();
    a.v = v_.data();
    a.o = const_cast<float*>(o_.data());
    a.lse = const_cast<float*>(lse_.data());
    a.workspace = workspace_bytes_ > 0 ? const_cast<std::byte*>(workspace_.data()) : nullptr;
    a.workspace_bytes = workspace_bytes_;
    if (!dout_.empty()) {
      a.dout = dout_.data();
      a.dq = const_cast<float*>(dq_.data());
      a.dk = const_cast<float*>(dk_.data());
      a.dv = const_cast<float*>(dv_.data());
    }
    return a;
  }

  void reserve_workspace(int64_t bytes) override {
    // The buffer only grows within a point, but each kernel is charged what it
    // asked for, not what an earlier kernel left behind.
    requested_ = bytes;
    if (bytes <= workspace_bytes_) return;
    charge(held_ + bytes, fmt::format("a workspace of {} bytes", bytes));
    try {
      workspace_.assign(size_t(bytes), std::byte{0});
    } catch (const std::bad_alloc&) {
      throw OutOfMemory(fmt::format("host allocation of a {} byte workspace failed", bytes));
    }
    workspace_bytes_ = bytes;
  }

  void set_o_dtype(DType d) override {
    if (d != output_dtype(problem_.dtype))
      throw KernelError(fmt::format("the cpu back end keeps O as {} values; it cannot hold an O in {}",
                                    to_string(output_dtype(problem_.dtype)), to_string(d)));
  }

  void poison_outputs() override {
    std::fill(o_.begin(), o_.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(lse_.begin(), lse_.end(), std::numeric_limits<float>::quiet_NaN());
  }

  void run_once(const std::function<void(RunContext&)>& launch) override {
    RunContext ctx = context();
    call(launch, ctx);
    // The workspace is the only memory a CPU kernel gets beyond its tensors.
    peak_extra_ = requested_;
  }

  HostOutputs fetch_outputs() override { return HostOutputs{o_, lse_}; }

  void poison_grads() override {
    for (auto* g : {&dq_, &dk_, &dv_}) std::fill(g->begin(), g->end(), std::numeric_limits<float>::quiet_NaN());
  }

  HostGrads fetch_grads() override { return HostGrads{dq_, dk_, dv_}; }

  TimingSummary time(const std::function<void(RunContext&)>& launch,
                     const TimingOptions& opt) override {
    using clock = std::chrono::steady_clock;
    RunContext ctx = context();
    for (int i = 0; i < opt.warmup; ++i) call(launch, ctx);
    std::vector<double> samples;
    const auto start = clock::now();
    do {
      const auto t0 = clock::now();
      call(launch, ctx);
      const auto t1 = clock::now();
      samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    } while (!timing_done(samples, std::chrono::duration<double>(clock::now() - start).count(),
                          opt));
    return summarize(std::move(samples), "host steady_clock, no cache flush");
  }

  int64_t peak_extra_bytes() const override { return peak_extra_; }

  void release() override {
    q_ = {};
    k_ = {};
    v_ = {};
    o_ = {};
    lse_ = {};
    dout_ = {};
    dq_ = {};
    dk_ = {};
    dv_ = {};
    workspace_ = {};
    workspace_bytes_ = 0;
    requested_ = 0;
    held_ = 0;
  }

 private:
  // CPU kernels take float32 buffers but count traffic at the problem dtype's size.
  RunContext context() const {
    RunContext ctx;
    ctx.threads = threads_;
    ctx.elem_bytes = dtype_bytes(problem_.dtype);
    return ctx;
  }

  void charge(int64_t total, const std::string& what) const {
    if (total > limit_)
      throw OutOfMemory(fmt::format("{} needs {} bytes ({:.3g} GiB) in total, over the CPU memory "
                                    "limit of {} bytes (--cpu-mem-limit)",
                                    what, total, double(total) / (1 << 30), limit_));
  }

  // Anything a CPU kernel throws besides KernelError is still a kernel failure.
  void call(const std::function<void(RunContext&)>& launch, RunContext& ctx) const {
    try {
      RunContext fresh = context();  // counts are per run, never accumulated
      launch(fresh);
      ctx = fresh;
    } catch (const KernelError&) {
      throw;
    } catch (const OutOfMemory&) {
      throw;
    } catch (const Stopped&) {  // Ctrl-C or --timeout inside the kernel's parallel_for
      throw;
    } catch (const std::bad_alloc&) {
      throw OutOfMemory("host allocation inside the CPU kernel failed");
    } catch (const std::exception& e) {
      throw KernelError(fmt::format("CPU kernel threw: {}", e.what()));
    }
  }

  int threads_;
  int64_t limit_;
  AttnProblem problem_;
  std::vector<float> q_, k_, v_, o_, lse_;
  std::vector<float> dout_, dq_, dk_, dv_;  // empty unless the inputs carried dO
  std::vector<std::byte> workspace_;
  int64_t workspace_bytes_ = 0;
  int64_t requested_ = 0;
  int64_t held_ = 0;
  int64_t peak_extra_ = -1;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(int threads, int64_t mem_limit_bytes) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_unique<CpuExecutor>(threads,
                                       mem_limit_bytes > 0 ? mem_limit_bytes : default_cpu_mem_limit());
}

std::unique_ptr<Executor> make_cpu_executor(int threads) { return make_cpu_executor(threads, 0); }

}  // namespace fa
