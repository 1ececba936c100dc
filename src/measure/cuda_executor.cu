// The CUDA back end: device buffers in the problem's dtype, NaN poisoning, timing
// with CUDA events and a cold L2 before every sample, SM clocks through NVML
// (dlopen), the cuBLAS bf16 matmul ceiling, DRAM counters through counters.h.
//
// Links only the static CUDA runtime and cuBLAS: on a machine without a driver
// cudaGetDeviceCount fails cleanly and make_cuda_executor says why.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <memory>
#include <sstream>
#include <vector>


#include "common/per_device.h"
#include "common/problem_params.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/parallel.h"
#include "measure/counters.h"
#include "measure/cuda_error.h"
#include "measure/executor.h"
#include "measure/nvml_clock.h"
#include "measure/timing.h"

namespace fa {
namespace {

// String building without fmt: nvcc's C++20 front end rejects fmt 9's headers.
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  os << std::setprecision(3) << std::fixed;
  (os << ... << args);
  return os.str();
}

std::string describe(cudaError_t e) { return cuda_error_string(int(e)); }

// Throws KernelError for an error of a run (sticky where the context is lost).
void check_run(cudaError_t e, const char* call, const std::string& what) {
  if (e == cudaSuccess) return;
  throw KernelError(cat(what, ": ", call, " failed: ", describe(e)),
                    cuda_error_is_sticky(int(e)));
}

// Any other CUDA failure outside a kernel run: the tool's own bug or a dead device.
void check_api(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw KernelError(cat(file, ":", line, ": ", call, " failed: ", describe(e)),
                    cuda_error_is_sticky(int(e)));
}
#define FA_CHECK(call) check_api((call), #call, __FILE__, __LINE__)

// cudaMalloc that turns an out-of-memory failure into OutOfMemory (clearing the
// error so later calls are unaffected) and any other failure into KernelError.
void* device_alloc(int64_t bytes, const std::string& what) {
  if (bytes <= 0) return nullptr;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, size_t(bytes));
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw OutOfMemory(cat("cudaMalloc of ", bytes, " bytes (", double(bytes) / (1 << 30), " GiB) for ",
                          what, " failed: ", free_b, " bytes free"));
  }
  check_api(e, "cudaMalloc", __FILE__, __LINE__);
  return p;
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

// The host conversions run in chunks on every core: a paper-sized point
// converts 100M values on upload and 33M on every fetch, seconds on one core.
template <typename Fn>
void for_chunks(size_t n, Fn fn) {
  constexpr size_t kChunk = size_t(1) << 16;
  parallel_for(int64_t((n + kChunk - 1) / kChunk), 0, [&](int64_t c, int) {
    const size_t begin = size_t(c) * kChunk;
    fn(begin, std::min(n, begin + kChunk));
  });
}

// Into `out`, which keeps its memory from one upload or fetch to the next.
void to_16bit(const std::vector<float>& x, DType t, std::vector<uint16_t>& out) {
  out.resize(x.size());
  for_chunks(x.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (t == DType::bf16) {
        __nv_bfloat16 h = __float2bfloat16_rn(x[i]);
        std::memcpy(&out[i], &h, 2);
      } else {
        __half h = __float2half_rn(x[i]);
        std::memcpy(&out[i], &h, 2);
      }
    }
  });
}

std::vector<float> from_16bit(const std::vector<uint16_t>& x, DType t) {
  std::vector<float> out(x.size());
  for_chunks(x.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (t == DType::bf16) {
        __nv_bfloat16 h;
        std::memcpy(&h, &x[i], 2);
        out[i] = __bfloat162float(h);
      } else {
        __half h;
        std::memcpy(&h, &x[i], 2);
        out[i] = __half2float(h);
      }
    }
  });
  return out;
}

// Seeded pseudo-random bf16 in [-1, 1) (the matmul ceiling must not run on zeros).
__global__ void fill_random_bf16(__nv_bfloat16* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    x[i] = __float2bfloat16(float(h & 0xffffff) / float(1 << 23) - 1.f);
  }
}

// Holds the stream for `cycles` SM clock cycles. Enqueued after the L2 flush and
// before the start event, it keeps the GPU busy while the host records the event
// and launches the kernel (fa3 encodes three TMA maps, cuDNN looks up its plan),
// so that host time never shows up between the two events (nvbench's blocking
// kernel does the same). One thread: it occupies one SM slot for ~100 us.
__global__ void hold_stream(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}


// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it.
std::string uuid_text(const cudaUUID_t& u) {
  std::ostringstream os;
  os << "GPU-" << std::hex << std::setfill('0');
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) os << '-';
    os << std::setw(2) << (unsigned(static_cast<unsigned char>(u.bytes[i])));
  }
  return os.str();
}

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(int device, const cudaDeviceProp& prop, const std::string& pci)
      : device_(device), prop_(prop), nvml_(pci), max_sm_mhz_(nvml_.max_sm_mhz()) {
    FA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FA_CHECK(cudaEventCreate(&start_));
    FA_CHECK(cudaEventCreate(&stop_));
  }
  ~CudaExecutor() override {
    // Freed on its own device, whichever thread (of --devices' workers) ends it.
    cudaSetDevice(device_);
    release();
    flush_.reset();
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  Backend backend() const override { return Backend::cuda; }

  DeviceInfo info() const override {
    DeviceInfo d;
    d.name = prop_.name;
    auto& m = d.details;
    m["device"] = std::to_string(device_);
    m["compute_capability"] = cat(prop_.major, ".", prop_.minor);
    m["sm_count"] = std::to_string(prop_.multiProcessorCount);
    m["l2_bytes"] = std::to_string(prop_.l2CacheSize);
    m["smem_per_block_optin"] = std::to_string(prop_.sharedMemPerBlockOptin);
    m["memory_bytes"] = std::to_string(prop_.totalGlobalMem);
    m["uuid"] = uuid_text(prop_.uuid);
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess) m["cuda_driver"] = cat(v / 1000, ".", v % 1000 / 10);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) m["cuda_runtime"] = cat(v / 1000, ".", v % 1000 / 10);
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
      m["cublas"] = cat(major, ".", minor, ".", patch);
    if (nvml_.available()) {
      m["driver"] = nvml_.driver_version();
      m["sm_clock_mhz"] = std::to_string(nvml_.sm_mhz());
      m["sm_clock_max_mhz"] = std::to_string(max_sm_mhz_);
    } else {
      m["nvml"] = "unavailable: " + nvml_.why_unavailable();
    }
    return d;
  }

  void prepare(const AttnProblem& p, const HostInputs& in) override {
    allocate(p, !in.dout.empty());
    if (int64_t(in.q.size()) != q_elems_ || int64_t(in.k.size()) != kv_elems_ || int64_t(in.v.size()) != kv_elems_ ||
        (!in.dout.empty() && int64_t(in.dout.size()) != o_elems_))
      throw KernelError("prepare: the host inputs do not have the sizes of " + p.describe());
    if (p.dtype == DType::e4m3) {  // the codes (one byte each) and their descales
      upload_e4m3(q_.get(), q_descales_, q_descale_, in.q8, q_elems_, "Q");
      upload_e4m3(k_.get(), k_descales_, k_descale_, in.k8, kv_elems_, "K");
      upload_e4m3(v_.get(), v_descales_, v_descale_, in.v8, kv_elems_, "V");
      if (in.o_scale > 0) {  // for a kernel that writes O in e4m3
        o_scale_buf_.reset(device_alloc(sizeof(float), cat("O's scale of ", problem_.describe())));
        FA_CHECK(cudaMemcpy(o_scale_buf_.get(), &in.o_scale, sizeof(float), cudaMemcpyHostToDevice));
        o_scale_ = in.o_scale;
      }
      return;
    }
    upload(q_.get(), in.q);
    upload(k_.get(), in.k);
    upload(v_.get(), in.v);
    if (dout_) upload(dout_.get(), in.dout);
  }

  InputBuffers allocate(const AttnProblem& p, bool with_dout) override {
    release();
    if (p.dtype == DType::f32)
      throw KernelError("the cuda back end stores bf16, fp16 or e4m3; fp32 problems are cpu-only");
    if (p.dtype == DType::e4m3 && with_dout) throw KernelError("e4m3 problems are forward only");
    problem_ = p;
    o_dtype_ = output_dtype(p.dtype);
    // An e4m3 O (set_o_dtype) is one byte an element: it fits the bf16 buffer.
    const int64_t in_bytes = dtype_bytes(p.dtype), o_bytes = dtype_bytes(output_dtype(p.dtype));
    const std::string what = p.describe();
    const int64_t o_elems = int64_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
    const int64_t kv_elems = int64_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
    const int64_t lse_elems = int64_t(p.batch) * p.heads * p.seqlen_q;
    try {
      q_.reset(device_alloc(o_elems * in_bytes, "Q of " + what));
      k_.reset(device_alloc(kv_elems * in_bytes, "K of " + what));
      v_.reset(device_alloc(kv_elems * in_bytes, "V of " + what));
      o_.reset(device_alloc(o_elems * o_bytes, "O of " + what));
      lse_.reset(device_alloc(lse_elems * 4, "LSE of " + what));
      if (with_dout) {  // the backward's tensors, in the dtype like Q, K, V
        dout_.reset(device_alloc(o_elems * 2, "dO of " + what));
        dq_.reset(device_alloc(o_elems * 2, "dQ of " + what));
        dk_.reset(device_alloc(kv_elems * 2, "dK of " + what));
        dv_.reset(device_alloc(kv_elems * 2, "dV of " + what));
      }
    } catch (const OutOfMemory&) {
      release();  // give back what the point got before it failed
      throw;
    }
    o_elems_ = o_elems;
    lse_elems_ = lse_elems;
    q_elems_ = o_elems;
    kv_elems_ = kv_elems;
    return InputBuffers{q_.get(), k_.get(), v_.get(), dout_.get()};
  }

  AttnParams params() const override {
    AttnParams a = make_params(problem_, elem_type(problem_.dtype));
    a.q = q_.get();
    a.k = k_.get();
    a.v = v_.get();
    a.o = o_.get();
    a.lse = static_cast<float*>(lse_.get());
    a.num_sms = prop_.multiProcessorCount;
    a.workspace = workspace_.get();
    a.workspace_bytes = workspace_bytes_;
    a.dout = dout_.get();
    a.dq = dq_.get();
    a.dk = dk_.get();
    a.dv = dv_.get();
    a.q_descale = q_descale_;
    a.k_descale = k_descale_;
    a.v_descale = v_descale_;
    a.o_dtype = elem_type(o_dtype_);
    a.o_scale = static_cast<const float*>(o_scale_buf_.get());
    return a;
  }

  void set_o_dtype(DType d) override {
    const bool e4m3_o = problem_.dtype == DType::e4m3 && d == DType::e4m3;
    if (d != output_dtype(problem_.dtype) && !e4m3_o)
      throw KernelError(cat("an O in ", to_string(d), " on ", problem_.describe(), ": the cuda back end holds O in ",
                            to_string(output_dtype(problem_.dtype)), " (or e4m3 on an e4m3 point)"));
    if (e4m3_o && !o_scale_buf_)
      throw KernelError(cat("an e4m3 O on ", problem_.describe(), ": the inputs carry no O scale"));
    o_dtype_ = d;
  }

  void reserve_workspace(int64_t bytes) override {
    requested_ = bytes;
    if (bytes <= workspace_bytes_) return;
    workspace_.reset();
    workspace_bytes_ = 0;
    workspace_.reset(device_alloc(bytes, cat("a ", bytes, " byte workspace")));
    workspace_bytes_ = bytes;
  }

  void poison_outputs() override {
    // 0xff bytes are NaN in bf16, fp16 and float32.
    FA_CHECK(cudaMemsetAsync(o_.get(), 0xff, size_t(o_elems_) * 2, stream_));
    FA_CHECK(cudaMemsetAsync(lse_.get(), 0xff, size_t(lse_elems_) * 4, stream_));
    FA_CHECK(cudaStreamSynchronize(stream_));
  }

  void run_once(const std::function<void(RunContext&)>& launch) override {
    size_t free_before = 0, free_after = 0, total = 0;
    FA_CHECK(cudaMemGetInfo(&free_before, &total));
    launch_checked(launch);
    check_run(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", problem_.describe());
    FA_CHECK(cudaMemGetInfo(&free_after, &total));
    // What a library allocated during the run (cuBLAS handle and workspace on first
    // use, cuDNN plans) plus the workspace this kernel asked for.
    const int64_t library = std::max<int64_t>(0, int64_t(free_before) - int64_t(free_after));
    peak_extra_ = requested_ + library;
  }

  HostOutputs fetch_outputs() override {
    HostOutputs out;
    out.lse.resize(size_t(lse_elems_));
    FA_CHECK(cudaMemcpy(out.lse.data(), lse_.get(), out.lse.size() * 4, cudaMemcpyDeviceToHost));
    if (o_dtype_ == DType::e4m3) {  // codes of O * o_scale_
      std::vector<uint8_t> codes(static_cast<size_t>(o_elems_));
      FA_CHECK(cudaMemcpy(codes.data(), o_.get(), codes.size(), cudaMemcpyDeviceToHost));
      out.o = dequantize_e4m3(codes, 1.f / o_scale_);
      return out;
    }
    out.o = download_16bit(o_.get(), o_elems_, output_dtype(problem_.dtype));
    return out;
  }

  void poison_grads() override {
    if (!dq_) throw KernelError("poison_grads: the point was prepared without dO (no backward tensors)");
    FA_CHECK(cudaMemsetAsync(dq_.get(), 0xff, size_t(q_elems_) * 2, stream_));
    FA_CHECK(cudaMemsetAsync(dk_.get(), 0xff, size_t(kv_elems_) * 2, stream_));
    FA_CHECK(cudaMemsetAsync(dv_.get(), 0xff, size_t(kv_elems_) * 2, stream_));
    FA_CHECK(cudaStreamSynchronize(stream_));
  }

  HostGrads fetch_grads() override {
    if (!dq_) throw KernelError("fetch_grads: the point was prepared without dO (no backward tensors)");
    HostGrads g;
    g.dq = download_16bit(dq_.get(), q_elems_, problem_.dtype);
    g.dk = download_16bit(dk_.get(), kv_elems_, problem_.dtype);
    g.dv = download_16bit(dv_.get(), kv_elems_, problem_.dtype);
    return g;
  }

  TimingSummary time(const std::function<void(RunContext&)>& launch,
                     const TimingOptions& opt) override {
    for (int i = 0; i < opt.warmup; ++i) launch_checked(launch);
    check_run(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (warm-up)", problem_.describe());
    const int64_t flush_bytes = opt.flush_l2 ? ensure_flush_buffer() : 0;
    int clock_khz = 0;
    FA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_));
    const long long hold_cycles = (long long)(clock_khz * 1e-3 * opt.hold_us);
    std::vector<double> samples;
    using clock = std::chrono::steady_clock;
    const auto t_begin = clock::now();
    do {
      // Overwrite >= 2x the L2 so the sample starts cold; outside the events.
      if (flush_bytes > 0)
        FA_CHECK(cudaMemsetAsync(flush_.get(), int(samples.size() & 0xff), size_t(flush_bytes), stream_));
      hold_stream<<<1, 1, 0, stream_>>>(hold_cycles);
      FA_CHECK(cudaGetLastError());
      FA_CHECK(cudaEventRecord(start_, stream_));
      launch_checked(launch);
      FA_CHECK(cudaEventRecord(stop_, stream_));
      check_run(cudaEventSynchronize(stop_), "cudaEventSynchronize", problem_.describe());
      float ms = 0;
      FA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      samples.push_back(ms);
    } while (!timing_done(samples, std::chrono::duration<double>(clock::now() - t_begin).count(), opt));
    const std::string flush =
        flush_bytes > 0 ? cat("L2 flushed (memset of ", flush_bytes >> 20, " MiB before each sample)")
                        : std::string(opt.flush_l2 ? "no L2 flush (flush buffer allocation failed)" : "no L2 flush");
    const std::string method =
        cat("cuda-events, ", flush, ", launch hidden behind a ", opt.hold_us, " us stream hold");
    return summarize(std::move(samples), method);
  }

  int64_t peak_extra_bytes() const override { return peak_extra_; }

  ClockReading clock() const override { return ClockReading{nvml_.sm_mhz(), max_sm_mhz_}; }

  double matmul_ceiling_tflops() override {
    // Measured once per device and process: every executor on a device shares it.
    static PerDevice<double> ceilings;
    return *ceilings.get(device_, [&] { return std::optional<double>(measure_matmul_ceiling()); });
  }

  double copy_bandwidth_gbps() override {
    static PerDevice<double> bandwidths;
    return *bandwidths.get(device_, [&] { return std::optional<double>(measure_copy_bandwidth()); });
  }

  std::optional<DramReading> measure_dram(const std::function<void(RunContext&)>& launch,
                                          std::string* why) override {
    auto counts = measure_dram_bytes([&] { launch_checked(launch); }, why);
    if (!counts) return std::nullopt;
    DramReading d;
    d.bytes.read_bytes = int64_t(counts->read_bytes);
    d.bytes.write_bytes = int64_t(counts->write_bytes);
    d.l2_hit_rate = counts->l2_hit_rate;
    return d;
  }

  void bind_thread() override { FA_CHECK(cudaSetDevice(device_)); }

  void release() override {
    q_.reset();
    k_.reset();
    v_.reset();
    o_.reset();
    lse_.reset();
    dout_.reset();
    dq_.reset();
    dk_.reset();
    dv_.reset();
    workspace_.reset();
    q_descales_.reset();
    k_descales_.reset();
    v_descales_.reset();
    q_descale_ = k_descale_ = v_descale_ = DescaleView{};
    o_scale_buf_.reset();
    o_scale_ = 0;
    workspace_bytes_ = requested_ = 0;
    o_elems_ = lse_elems_ = q_elems_ = kv_elems_ = 0;
  }

 private:
  void upload(void* dst, const std::vector<float>& src) {
    to_16bit(src, problem_.dtype, staging_);
    FA_CHECK(cudaMemcpy(dst, staging_.data(), staging_.size() * 2, cudaMemcpyHostToDevice));
  }

  std::vector<float> download_16bit(const void* src, int64_t elems, DType dtype) {
    staging_.resize(static_cast<size_t>(elems));
    FA_CHECK(cudaMemcpy(staging_.data(), src, staging_.size() * 2, cudaMemcpyDeviceToHost));
    return from_16bit(staging_, dtype);
  }

  // An e4m3 tensor's codes into `dst`, its descales into a buffer of their own.
  void upload_e4m3(void* dst, DeviceBuffer& descales, DescaleView& view, const E4m3Codes& t, int64_t elems,
                   const char* name) {
    if (int64_t(t.codes.size()) != elems || t.descales.empty())
      throw KernelError(cat("prepare: the e4m3 ", name, " codes or descales do not fit ", problem_.describe()));
    FA_CHECK(cudaMemcpy(dst, t.codes.data(), t.codes.size(), cudaMemcpyHostToDevice));
    const int64_t bytes = int64_t(t.descales.size() * sizeof(float));
    descales.reset(device_alloc(bytes, cat("the ", name, " descales of ", problem_.describe())));
    FA_CHECK(cudaMemcpy(descales.get(), t.descales.data(), size_t(bytes), cudaMemcpyHostToDevice));
    view = DescaleView{static_cast<const float*>(descales.get()), t.batch_stride, t.head_stride, t.block_rows};
  }

  // Runs the launch on our stream; a launch-time error left in the runtime (one a
  // kernel's launch() did not return) is reported here, not by the next run.
  void launch_checked(const std::function<void(RunContext&)>& launch) {
    RunContext ctx;
    ctx.stream = stream_;
    launch(ctx);
    check_run(cudaGetLastError(), "kernel launch", problem_.describe());
  }

  int64_t ensure_flush_buffer() {
    const int64_t want = int64_t(std::max(prop_.l2CacheSize, 1 << 20)) * 2;
    if (!flush_) {
      void* p = nullptr;
      if (cudaMalloc(&p, size_t(want)) != cudaSuccess) {
        cudaGetLastError();
        return 0;
      }
      flush_.reset(p);
    }
    return want;
  }

  // cuBLAS 8192^3 bf16 GEMM (float32 accumulate) on random data: median of 7 runs
  // after 2 warm-ups. 0 when it cannot run (memory, cuBLAS failure).
  double measure_matmul_ceiling() {
    constexpr int n = 8192;
    const size_t bytes = size_t(n) * n * 2;
    DeviceBuffer a, b, c;
    cublasHandle_t h = nullptr;
    try {
      a.reset(device_alloc(int64_t(bytes), "the matmul ceiling's A"));
      b.reset(device_alloc(int64_t(bytes), "the matmul ceiling's B"));
      c.reset(device_alloc(int64_t(bytes), "the matmul ceiling's C"));
    } catch (const OutOfMemory&) {
      return 0;
    }
    fill_random_bf16<<<1024, 256, 0, stream_>>>(static_cast<__nv_bfloat16*>(a.get()), int64_t(n) * n, 1u);
    fill_random_bf16<<<1024, 256, 0, stream_>>>(static_cast<__nv_bfloat16*>(b.get()), int64_t(n) * n, 2u);
    FA_CHECK(cudaGetLastError());
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 0;
    std::vector<double> ms;
    bool ok = cublasSetStream(h, stream_) == CUBLAS_STATUS_SUCCESS;
    const float one = 1.f, zero = 0.f;
    for (int i = 0; ok && i < 9; ++i) {
      FA_CHECK(cudaEventRecord(start_, stream_));
      ok = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), CUDA_R_16BF, n, b.get(),
                        CUDA_R_16BF, n, &zero, c.get(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
      FA_CHECK(cudaEventRecord(stop_, stream_));
      FA_CHECK(cudaEventSynchronize(stop_));
      float t = 0;
      FA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
      if (i >= 2) ms.push_back(t);
    }
    cublasDestroy(h);
    if (!ok || ms.empty()) return 0;
    std::sort(ms.begin(), ms.end());
    return 2.0 * n * double(n) * n / (ms[ms.size() / 2] * 1e-3) / 1e12;
  }

  // cudaMemcpyAsync device to device of a buffer of max(16 x L2, 1 GiB), so neither
  // side fits in L2: bytes read + written / median time of 7 copies after 2 warm-ups.
  // 0 when the two buffers cannot be allocated.
  double measure_copy_bandwidth() {
    const size_t bytes = std::max(size_t(prop_.l2CacheSize) * 16, size_t(1) << 30);
    DeviceBuffer src, dst;
    try {
      src.reset(device_alloc(int64_t(bytes), "the copy bandwidth's source"));
      dst.reset(device_alloc(int64_t(bytes), "the copy bandwidth's destination"));
    } catch (const OutOfMemory&) {
      return 0;
    }
    FA_CHECK(cudaMemsetAsync(src.get(), 1, bytes, stream_));
    std::vector<double> ms;
    for (int i = 0; i < 9; ++i) {
      FA_CHECK(cudaEventRecord(start_, stream_));
      FA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream_));
      FA_CHECK(cudaEventRecord(stop_, stream_));
      FA_CHECK(cudaEventSynchronize(stop_));
      float t = 0;
      FA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
      if (i >= 2) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return 2.0 * double(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  }

  int device_;
  cudaDeviceProp prop_;
  NvmlClock nvml_;
  const int max_sm_mhz_;  // a hardware constant: read once, not at every row's clock reading
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  AttnProblem problem_;
  DeviceBuffer q_, k_, v_, o_, lse_, workspace_, flush_;
  DeviceBuffer dout_, dq_, dk_, dv_;  // null unless the inputs carried dO
  DeviceBuffer q_descales_, k_descales_, v_descales_;  // e4m3 points only
  DescaleView q_descale_, k_descale_, v_descale_;
  DeviceBuffer o_scale_buf_;  // e4m3 points: HostInputs::o_scale, one float
  float o_scale_ = 0;
  DType o_dtype_ = DType::bf16;  // what the runs write O in (set_o_dtype)
  int64_t o_elems_ = 0, lse_elems_ = 0, q_elems_ = 0, kv_elems_ = 0;
  int64_t workspace_bytes_ = 0, requested_ = 0, peak_extra_ = -1;
  std::vector<uint16_t> staging_;  // 16-bit values on their way to or from the device
};

}  // namespace

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? cat("no CUDA device (", describe(e), ")") : "no CUDA device";
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::unique_ptr<Executor> make_cuda_executor(int device, std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why)
      *why = e != cudaSuccess ? cat("no CUDA device (", describe(e), ")") : "no CUDA device";
    cudaGetLastError();
    return nullptr;
  }
  if (device < 0 || device >= count) {
    if (why) *why = cat("no CUDA device ", device, " (this machine has ", count, ")");
    return nullptr;
  }
  cudaDeviceProp prop{};
  char pci[32] = {};
  if (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(pci, sizeof pci, device) != cudaSuccess) {
    if (why) *why = cat("CUDA device ", device, " cannot be opened (", describe(cudaGetLastError()), ")");
    return nullptr;
  }
  return std::make_unique<CudaExecutor>(device, prop, pci);
}

}  // namespace fa
