// The ring attention forward on the GPUs of one host, one thread driving them all.
//
// Every GPU keeps its Q shard (zigzag.h's layout) and, for N steps, attends it to
// the K/V shard it holds with a single-GPU forward (fa3's, passed in as a kernel
// entry) on the caller's stream, the compute stream, while a stream of its own,
// the comm stream, sends that K/V shard to GPU r + 1 and receives the next one
// from GPU r - 1 into the other of two ring buffers. Events order the two: a
// receive waits until the compute that last read its buffer is done; a compute
// waits for the receive of the shard it reads. Each step's partial (O, LSE) is
// folded into a float32 running pair (lse_merge.h); the last step writes O in
// bf16 and LSE in float32.
//
// A GPU's fa3 runs on all its SMs but `comm_sms`, which stay free for NCCL's
// kernels: a persistent attention grid on every SM would hold the transfer back
// until it ends. Timing events around every step's compute and communication
// give a per-GPU timeline (docs/RING.md, "Measuring the overlap").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/gpu_entry.h"
#include "ring/nccl_loader.h"
#include "ring/zigzag.h"

namespace fa::ring {

struct RingShape {
  int gpus = 1;
  int batch = 1, heads = 1, heads_kv = 1;  // heads % heads_kv == 0 (GQA / MQA)
  int64_t seqlen_per_gpu = 2;  // even: two zigzag chunks
  int head_dim = 128;
  bool causal = false;
  float softmax_scale = 0;  // 0: 1/sqrt(head_dim)
  int comm_sms = 0;         // SMs the attention grid leaves to NCCL (N > 1 only)

  Zigzag zigzag() const { return {gpus, seqlen_per_gpu / 2}; }
  // "" when the shape can run, else why not.
  std::string invalid_reason() const;
};

// One GPU's tensors, on that GPU, contiguous: Q and O [batch, seqlen_per_gpu,
// heads, head_dim] bf16, K and V the same with heads_kv, LSE [batch, heads,
// seqlen_per_gpu] float32, rows in zigzag order.
struct GpuShard {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
};

// Planted faults, for the check to prove it catches a broken ring.
enum class RingFault {
  none,
  negate_lse,      // every merge reads the partial's LSE with the wrong sign
  skip_last_step,  // the last step's attention is not computed (its K/V never seen)
};

// Milliseconds from the GPU's start of the forward (an event on its compute
// stream when the forward was enqueued) to the edges of one step's work.
struct StepInterval {
  float compute_begin = 0, compute_end = 0;  // attention and merge, compute stream
  float comm_begin = -1, comm_end = -1;      // send + receive for the next step; -1: none (last step)
};

class RingForward {
 public:
  // devices[r] is ring rank r and comms[r] its communicator (ncclCommInitAll over
  // `devices`); with one GPU, nccl may be null and comms empty. Allocates the
  // ring buffers, running pair, streams and events on every GPU. nullptr with
  // *why on bad input or a failed allocation.
  static std::unique_ptr<RingForward> create(const NcclLibrary* nccl, std::vector<int> devices,
                                             std::vector<NcclComm> comms, const RingShape&,
                                             const GpuKernelEntry& attention, std::string* why);
  ~RingForward();
  RingForward(const RingForward&) = delete;
  RingForward& operator=(const RingForward&) = delete;

  // Enqueues one forward; shards[r] and streams[r] are GPU r's. Work already on
  // streams[r] comes first; when streams[r] reaches the end of what this enqueued,
  // GPU r's O and LSE are written. "" or what failed.
  std::string enqueue(const std::vector<GpuShard>& shards, const std::vector<cudaStream_t>& streams,
                      RingFault fault = RingFault::none);
  // The last forward's intervals, [gpu][step]; call after its streams finished.
  std::vector<std::vector<StepInterval>> timeline() const;
  // Bytes one GPU sends (and receives) per forward: its K and V shard, N - 1 times.
  int64_t bytes_sent_per_gpu() const;
  const RingShape& shape() const { return shape_; }

 private:
  struct Gpu;
  RingForward() = default;
  std::string enqueue_comm(int step, const std::vector<GpuShard>&);
  std::string enqueue_compute(int step, const std::vector<GpuShard>&, const std::vector<cudaStream_t>&,
                              RingFault);

  const NcclLibrary* nccl_ = nullptr;
  RingShape shape_;
  GpuKernelEntry attention_{};
  std::vector<NcclComm> comms_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
};

}  // namespace fa::ring
