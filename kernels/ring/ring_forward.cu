#include "ring/ring_forward.h"

#include <cmath>

#include "common/attn_params.h"
#include "ring/lse_merge.h"
#include "ring/ring_plan.h"

namespace fa::ring {

namespace {

constexpr int64_t kElemBytes = 2;  // bf16

std::string cuda_error(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

#define RING_TRY(call)                                         \
  do {                                                         \
    const cudaError_t e_ = (call);                             \
    if (e_ != cudaSuccess) return cuda_error(#call, e_);       \
  } while (0)

const char* at(const void* base, int64_t elems) { return static_cast<const char*>(base) + elems * kElemBytes; }

}  // namespace

std::string RingShape::invalid_reason() const {
  if (gpus < 1) return "ring: --gpus must be >= 1";
  if (batch < 1 || heads < 1 || heads_kv < 1) return "ring: batch, heads and heads_kv must be >= 1";
  if (heads % heads_kv != 0) return "ring: heads must be a multiple of heads_kv";
  if (seqlen_per_gpu < 2 || seqlen_per_gpu % 2 != 0)
    return "ring: seqlen_per_gpu must be even and >= 2 (two zigzag chunks per GPU)";
  if (head_dim < 8 || head_dim % 8 != 0) return "ring: head_dim must be a multiple of 8";
  if (comm_sms < 0) return "ring: comm_sms must be >= 0";
  // fa3's tile schedule and LSE index rows with int.
  if (seqlen_per_gpu > (int64_t(1) << 30)) return "ring: seqlen_per_gpu too large";
  return "";
}

// One GPU's share of the ring: its comm stream, the two K/V ring buffers, the
// partial and running (O, LSE), and the events that order and time its steps.
struct RingForward::Gpu {
  int device = 0;
  int attention_sms = 0;
  cudaStream_t comm = nullptr;
  void* ring_k[2] = {};
  void* ring_v[2] = {};
  void* o_part = nullptr;  // bf16, shard-shaped: a call writes its rows
  float* lse_part = nullptr;  // [batch, heads, call rows]
  float* o_acc = nullptr;
  float* lse_acc = nullptr;
  cudaEvent_t start = nullptr;
  std::vector<cudaEvent_t> compute_begin, compute_end, comm_begin, comm_end;
  std::vector<cudaEvent_t> kv_read;  // the step's attention has read its K/V (ordering only)

  ~Gpu() {
    if (cudaSetDevice(device) != cudaSuccess) return;
    for (void* p : {ring_k[0], ring_k[1], ring_v[0], ring_v[1], o_part}) cudaFree(p);
    for (float* p : {lse_part, o_acc, lse_acc}) cudaFree(p);
    for (auto* list : {&compute_begin, &compute_end, &comm_begin, &comm_end, &kv_read})
      for (cudaEvent_t e : *list) cudaEventDestroy(e);
    if (start) cudaEventDestroy(start);
    if (comm) cudaStreamDestroy(comm);
  }
};

std::unique_ptr<RingForward> RingForward::create(const NcclLibrary* nccl, std::vector<int> devices,
                                                 std::vector<NcclComm> comms, const RingShape& shape,
                                                 const GpuKernelEntry& attention, std::string* why) {
  *why = shape.invalid_reason();
  if (!why->empty()) return nullptr;
  if (int(devices.size()) != shape.gpus) {
    *why = "ring: one device per GPU of the ring needed";
    return nullptr;
  }
  if (shape.gpus > 1 && (nccl == nullptr || int(comms.size()) != shape.gpus)) {
    *why = "ring: more than one GPU needs NCCL and one communicator per GPU";
    return nullptr;
  }
  if (attention.launch == nullptr) {
    *why = "ring: no attention kernel";
    return nullptr;
  }
  std::unique_ptr<RingForward> ring(new RingForward);
  ring->nccl_ = nccl;
  ring->shape_ = shape;
  if (ring->shape_.softmax_scale == 0) ring->shape_.softmax_scale = 1.f / std::sqrt(float(shape.head_dim));
  ring->attention_ = attention;
  ring->comms_ = std::move(comms);

  const int n = shape.gpus;
  const int64_t rows = shape.seqlen_per_gpu;
  const int64_t q_elems = int64_t(shape.batch) * rows * shape.heads * shape.head_dim;
  const int64_t kv_elems = int64_t(shape.batch) * rows * shape.heads_kv * shape.head_dim;
  const int64_t lse_elems = int64_t(shape.batch) * shape.heads * rows;
  auto fail = [&](const std::string& what) {
    *why = "ring: GPU " + std::to_string(ring->gpus_.back()->device) + ": " + what;
    return nullptr;
  };
  for (int r = 0; r < n; ++r) {
    ring->gpus_.push_back(std::make_unique<Gpu>());
    Gpu& g = *ring->gpus_.back();
    g.device = devices[r];
    cudaError_t e = cudaSetDevice(g.device);
    if (e != cudaSuccess) return fail(cuda_error("cudaSetDevice", e));
    int sms = 0;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g.device)) != cudaSuccess)
      return fail(cuda_error("cudaDeviceGetAttribute", e));
    g.attention_sms = n > 1 ? sms - shape.comm_sms : sms;
    if (g.attention_sms < 1) return fail("comm_sms leaves no SM for the attention");
    if ((e = cudaStreamCreateWithFlags(&g.comm, cudaStreamNonBlocking)) != cudaSuccess)
      return fail(cuda_error("cudaStreamCreate", e));
    for (int i = 0; i < 2 && n > 1; ++i) {
      if ((e = cudaMalloc(&g.ring_k[i], kv_elems * kElemBytes)) != cudaSuccess ||
          (e = cudaMalloc(&g.ring_v[i], kv_elems * kElemBytes)) != cudaSuccess)
        return fail(cuda_error("cudaMalloc (K/V ring buffers)", e));
    }
    if ((e = cudaMalloc(&g.o_part, q_elems * kElemBytes)) != cudaSuccess ||
        (e = cudaMalloc(&g.lse_part, lse_elems * sizeof(float))) != cudaSuccess ||
        (e = cudaMalloc(&g.o_acc, q_elems * sizeof(float))) != cudaSuccess ||
        (e = cudaMalloc(&g.lse_acc, lse_elems * sizeof(float))) != cudaSuccess)
      return fail(cuda_error("cudaMalloc (partial and running O, LSE)", e));
    if ((e = cudaEventCreate(&g.start)) != cudaSuccess) return fail(cuda_error("cudaEventCreate", e));
    for (int s = 0; s < n; ++s) {
      cudaEvent_t b, c, k;
      if ((e = cudaEventCreate(&b)) != cudaSuccess || (e = cudaEventCreate(&c)) != cudaSuccess ||
          (e = cudaEventCreateWithFlags(&k, cudaEventDisableTiming)) != cudaSuccess)
        return fail(cuda_error("cudaEventCreate", e));
      g.compute_begin.push_back(b);
      g.compute_end.push_back(c);
      g.kv_read.push_back(k);
      if (s + 1 < n) {
        if ((e = cudaEventCreate(&b)) != cudaSuccess || (e = cudaEventCreate(&c)) != cudaSuccess)
          return fail(cuda_error("cudaEventCreate", e));
        g.comm_begin.push_back(b);
        g.comm_end.push_back(c);
      }
    }
  }
  return ring;
}

RingForward::~RingForward() = default;

int64_t RingForward::bytes_sent_per_gpu() const {
  const RingShape& s = shape_;
  return int64_t(s.gpus - 1) * 2 * s.batch * s.seqlen_per_gpu * s.heads_kv * s.head_dim * kElemBytes;
}

std::string RingForward::enqueue(const std::vector<GpuShard>& shards, const std::vector<cudaStream_t>& streams,
                                 RingFault fault) {
  const int n = shape_.gpus;
  if (int(shards.size()) != n || int(streams.size()) != n) return "ring: one shard and one stream per GPU needed";
  for (int r = 0; r < n; ++r) {
    Gpu& g = *gpus_[r];
    RING_TRY(cudaSetDevice(g.device));
    RING_TRY(cudaEventRecord(g.start, streams[r]));
    // The comm stream starts after the inputs' writers and the previous
    // forward's last reads of the ring buffers, all earlier on the compute stream.
    RING_TRY(cudaStreamWaitEvent(g.comm, g.start, 0));
  }
  // Host order: step s's transfer before its compute, so the wait of compute s + 1
  // on the transfer's end event and of transfer s + 1 on compute s's read find
  // their events already recorded.
  for (int s = 0; s < n; ++s) {
    if (s + 1 < n) {
      std::string err = enqueue_comm(s, shards);
      if (!err.empty()) return err;
    }
    std::string err = enqueue_compute(s, shards, streams, fault);
    if (!err.empty()) return err;
  }
  return "";
}

// Step s's transfer (ring_plan.h): GPU r sends the K/V it holds at step s to
// r + 1 and receives what it holds at step s + 1 from r - 1, into the ring buffer
// the attention of step s - 1 read: the transfer waits for that read.
std::string RingForward::enqueue_comm(int s, const std::vector<GpuShard>& shards) {
  const int n = shape_.gpus;
  const size_t bytes =
      size_t(shape_.batch) * shape_.seqlen_per_gpu * shape_.heads_kv * shape_.head_dim * kElemBytes;
  for (int r = 0; r < n; ++r) {
    Gpu& g = *gpus_[r];
    RING_TRY(cudaSetDevice(g.device));
    if (s >= 1) RING_TRY(cudaStreamWaitEvent(g.comm, g.kv_read[s - 1], 0));
    RING_TRY(cudaEventRecord(g.comm_begin[s], g.comm));
  }
  // One thread drives every GPU: NCCL needs all their calls in one group.
  NcclResult res = nccl_->group_start();
  if (res != kNcclSuccess) return nccl_->error("ncclGroupStart", res);
  std::string err;
  const Zigzag z = shape_.zigzag();
  for (int r = 0; r < n && err.empty(); ++r) {
    Gpu& g = *gpus_[r];
    const StepPlan plan = plan_step(z, shape_.causal, r, s);
    const void* k = plan.read == kKvInput ? shards[r].k : g.ring_k[plan.read];
    const void* v = plan.read == kKvInput ? shards[r].v : g.ring_v[plan.read];
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    // Sends and receives between one pair of GPUs match in order: K, then V.
    if ((res = nccl_->send(k, bytes, kNcclUint8, next, comms_[r], g.comm)) != kNcclSuccess)
      err = nccl_->error("ncclSend", res);
    else if ((res = nccl_->send(v, bytes, kNcclUint8, next, comms_[r], g.comm)) != kNcclSuccess)
      err = nccl_->error("ncclSend", res);
    else if ((res = nccl_->recv(g.ring_k[plan.recv], bytes, kNcclUint8, prev, comms_[r], g.comm)) != kNcclSuccess)
      err = nccl_->error("ncclRecv", res);
    else if ((res = nccl_->recv(g.ring_v[plan.recv], bytes, kNcclUint8, prev, comms_[r], g.comm)) != kNcclSuccess)
      err = nccl_->error("ncclRecv", res);
  }
  res = nccl_->group_end();
  if (!err.empty()) return err;
  if (res != kNcclSuccess) return nccl_->error("ncclGroupEnd", res);
  for (int r = 0; r < n; ++r) {
    Gpu& g = *gpus_[r];
    RING_TRY(cudaSetDevice(g.device));
    RING_TRY(cudaEventRecord(g.comm_end[s], g.comm));
  }
  return "";
}

// Step s's attention on every GPU (its plan's call) and the merge of its
// partial into the running pair; the last step's merge writes the outputs.
std::string RingForward::enqueue_compute(int s, const std::vector<GpuShard>& shards,
                                         const std::vector<cudaStream_t>& streams, RingFault fault) {
  const RingShape& sh = shape_;
  const int n = sh.gpus;
  const Zigzag z = sh.zigzag();
  for (int r = 0; r < n; ++r) {
    Gpu& g = *gpus_[r];
    cudaStream_t stream = streams[r];
    RING_TRY(cudaSetDevice(g.device));
    if (s >= 1) RING_TRY(cudaStreamWaitEvent(stream, g.comm_end[s - 1], 0));
    RING_TRY(cudaEventRecord(g.compute_begin[s], stream));
    const StepPlan plan = plan_step(z, sh.causal, r, s, fault == RingFault::skip_last_step && s == n - 1);
    const void* k = plan.read == kKvInput ? shards[r].k : g.ring_k[plan.read];
    const void* v = plan.read == kKvInput ? shards[r].v : g.ring_v[plan.read];
    if (plan.calls.size() > 1) return "ring: a step of more than one call is not supported";

    MergeArgs m;
    m.batch = sh.batch;
    m.heads = sh.heads;
    m.head_dim = sh.head_dim;
    m.seqlen = sh.seqlen_per_gpu;
    m.o_part = g.o_part;
    m.lse_part = g.lse_part;
    m.o_acc = g.o_acc;
    m.lse_acc = g.lse_acc;
    m.first = plan.first;
    m.negate_part_lse = fault == RingFault::negate_lse;
    m.part_begin = plan.part_begin;
    m.part_rows = plan.part_rows;
    m.rows_begin = plan.merge_begin;
    m.rows = plan.merge_rows;
    if (plan.last) {
      m.o_out = shards[r].o;
      m.lse_out = shards[r].lse;
    }
    for (const StepCall& c : plan.calls) {
      AttnParams p;
      p.batch = sh.batch;
      p.heads = sh.heads;
      p.heads_kv = sh.heads_kv;
      p.seqlen_q = int(c.q_rows);
      p.seqlen_k = int(c.kv_rows);
      p.head_dim = sh.head_dim;
      p.softmax_scale = sh.softmax_scale;
      p.softmax_scale_log2 = sh.softmax_scale * 1.4426950408889634f;
      p.causal = c.causal;
      p.dtype = ElemType::bf16;
      p.num_sms = g.attention_sms;
      // Views into the shards: rows are contiguous, so a call's rows start at an
      // offset and keep the shard's strides; its LSE is its own [b, h, q_rows].
      const int64_t q_row = int64_t(sh.heads) * sh.head_dim, kv_row = int64_t(sh.heads_kv) * sh.head_dim;
      p.q = at(shards[r].q, c.q_begin * q_row);
      p.k = at(k, c.kv_begin * kv_row);
      p.v = at(v, c.kv_begin * kv_row);
      p.o = const_cast<char*>(at(g.o_part, c.q_begin * q_row));
      p.lse = g.lse_part;
      p.q_head_stride = p.o_head_stride = sh.head_dim;
      p.q_row_stride = p.o_row_stride = q_row;
      p.q_batch_stride = p.o_batch_stride = q_row * sh.seqlen_per_gpu;
      p.k_head_stride = p.v_head_stride = sh.head_dim;
      p.k_row_stride = p.v_row_stride = kv_row;
      p.k_batch_stride = p.v_batch_stride = kv_row * sh.seqlen_per_gpu;
      if (attention_.unsupported != nullptr) {
        if (const char* no = attention_.unsupported(p)) return std::string("ring: attention kernel: ") + no;
      }
      const int err = attention_.launch(p, stream);
      if (err != 0) return cuda_error("ring: attention launch", cudaError_t(err));
    }
    RING_TRY(cudaEventRecord(g.kv_read[s], stream));
    RING_TRY(launch_lse_merge(m, stream));
    RING_TRY(cudaEventRecord(g.compute_end[s], stream));
  }
  return "";
}

std::vector<std::vector<StepInterval>> RingForward::timeline() const {
  std::vector<std::vector<StepInterval>> out;
  for (const auto& gp : gpus_) {
    const Gpu& g = *gp;
    cudaSetDevice(g.device);
    auto ms = [&](cudaEvent_t e) {
      float x = -1;
      if (cudaEventElapsedTime(&x, g.start, e) != cudaSuccess) x = -1;
      return x;
    };
    std::vector<StepInterval> steps;
    for (size_t s = 0; s < g.compute_begin.size(); ++s) {
      StepInterval i;
      i.compute_begin = ms(g.compute_begin[s]);
      i.compute_end = ms(g.compute_end[s]);
      if (s < g.comm_begin.size()) {
        i.comm_begin = ms(g.comm_begin[s]);
        i.comm_end = ms(g.comm_end[s]);
      }
      steps.push_back(i);
    }
    out.push_back(steps);
  }
  return out;
}

}  // namespace fa::ring
