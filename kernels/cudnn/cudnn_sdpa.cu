// The cudnn family's run-time side: AttnParams to a plan's shape, the refusals
// cuDNN's fused attention is known to make, and the launch, which only fills a
// variant pack from the params and executes the cached plan.
// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/cudnn_sdpa.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cudnn/plan_cache.h"
#include "cudnn/sdpa_graph.h"

namespace fa::cudnn_sdpa {
namespace {

using cudnn::SdpaPlan;
using cudnn::SdpaShape;

constexpr size_t kBwdMinVersion = 91002;  // see bwd_version_refusal

bool is_bwd(SdpaPass pass) { return pass == SdpaPass::bwd; }

// Refusals that need no cuDNN call: what its fused attention does not take.
const char* shape_refusal(const AttnParams& p, SdpaPass pass) {
  if (p.dtype != ElemType::f16 && p.dtype != ElemType::bf16)
    return "cudnn: fused attention takes fp16 or bf16 only";
  if (p.head_dim % 8 != 0 || p.head_dim > 256)
    return "cudnn: head_dim must be a multiple of 8 and at most 256";
  if (p.causal && p.seqlen_q > p.seqlen_k)
    return "cudnn: bottom-right causal needs seqlen_q <= seqlen_k (cuDNN cannot express rows "
           "that see no key)";
  if (p.heads_kv <= 0 || p.heads % p.heads_kv != 0) return "cudnn: heads must be a multiple of heads_kv";
  if (is_bwd(pass) && p.seqlen_q == 1 && p.seqlen_k == 1)
    return "cudnn: the backward does not take seqlen_q = seqlen_k = 1";
  // 16-byte aligned rows: every stride a multiple of 8 two-byte elements.
  std::vector<int64_t> strides = {p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride,
                                  p.k_row_stride,   p.k_head_stride, p.v_batch_stride, p.v_row_stride,
                                  p.v_head_stride,  p.o_batch_stride, p.o_row_stride, p.o_head_stride};
  if (is_bwd(pass))
    strides.insert(strides.end(), {p.do_batch_stride, p.do_row_stride, p.do_head_stride, p.dq_batch_stride,
                                   p.dq_row_stride, p.dq_head_stride, p.dk_batch_stride, p.dk_row_stride,
                                   p.dk_head_stride, p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride});
  for (int64_t s : strides)
    if (s % 8 != 0) return "cudnn: strides must be multiples of 8 elements (16-byte alignment)";
  return nullptr;
}

// The backward graph is the one cuDNN's frontend builds for 9.10.2 and later:
// older releases need the dQ accumulator cleared by the caller (< 9.6), have
// known backward bugs (9.10.0/9.10.1) or need a second padding select after
// the stats (< 9.10), none of which is built here.
const char* bwd_version_refusal() {
  static const std::string why = [] {
    size_t v = cudnnGetVersion();
    if (v >= kBwdMinVersion) return std::string();
    return "cudnn: cuDNN " + cudnn::version_string(v) + " loaded; the backward graph needs " +
           cudnn::version_string(kBwdMinVersion) + " or later";
  }();
  return why.empty() ? nullptr : why.c_str();
}

SdpaShape shape_of(const AttnParams& p, SdpaPass pass) {
  SdpaShape s;
  s.pass = pass;
  s.io = p.dtype == ElemType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  s.batch = p.batch, s.heads = p.heads, s.heads_kv = p.heads_kv;
  s.seqlen_q = p.seqlen_q, s.seqlen_k = p.seqlen_k, s.head_dim = p.head_dim;
  auto put = [](int64_t* d, int64_t batch, int64_t head, int64_t row) { d[0] = batch, d[1] = head, d[2] = row; };
  put(s.q_stride, p.q_batch_stride, p.q_head_stride, p.q_row_stride);
  put(s.k_stride, p.k_batch_stride, p.k_head_stride, p.k_row_stride);
  put(s.v_stride, p.v_batch_stride, p.v_head_stride, p.v_row_stride);
  put(s.o_stride, p.o_batch_stride, p.o_head_stride, p.o_row_stride);
  s.causal = p.causal;
  if (is_bwd(pass)) {
    put(s.do_stride, p.do_batch_stride, p.do_head_stride, p.do_row_stride);
    put(s.dq_stride, p.dq_batch_stride, p.dq_head_stride, p.dq_row_stride);
    put(s.dk_stride, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride);
    put(s.dv_stride, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride);
    s.deterministic = p.deterministic;
  }
  return s;
}

// The plan for p, or nullptr with *why.
const SdpaPlan* plan_for(const AttnParams& p, SdpaPass pass, cudnn::Device** dev, const char** why) {
  if ((*why = shape_refusal(p, pass))) return nullptr;
  if (is_bwd(pass) && (*why = bwd_version_refusal())) return nullptr;
  return cudnn::cached_plan(shape_of(p, pass), dev, why);
}

// By-value scalars: cuDNN copies them into the kernel's arguments during execute.
struct Scalars {
  float scale = 0.f, neg_inf = -std::numeric_limits<float>::infinity(), one = 1.f;
  int32_t seqlen_k = 0, seqlen_q = 0;
};

void* pointer_for(int64_t uid, const AttnParams& p, const SdpaPlan& plan, Scalars& v) {
  char* ws = static_cast<char*>(p.workspace);
  switch (uid) {
    case cudnn::kUidQ: return const_cast<void*>(p.q);
    case cudnn::kUidK: return const_cast<void*>(p.k);
    case cudnn::kUidV: return const_cast<void*>(p.v);
    case cudnn::kUidO: return p.o;
    case cudnn::kUidStats: return p.lse;
    case cudnn::kUidScale: return &v.scale;
    case cudnn::kUidNegInf: return &v.neg_inf;
    case cudnn::kUidSeqlenK: return &v.seqlen_k;
    case cudnn::kUidSeqlenQ: return &v.seqlen_q;
    case cudnn::kUidDO: return const_cast<void*>(p.dout);
    case cudnn::kUidDQ: return p.dq;
    case cudnn::kUidDK: return p.dk;
    case cudnn::kUidDV: return p.dv;
    case cudnn::kUidOne: return &v.one;
    case cudnn::kUidSoftmaxSum: return ws + plan.softmax_sum_offset;
    case cudnn::kUidDQAccum: return ws + plan.dq_accum_offset;
    case cudnn::kUidPadLenQ: return plan.pad_lengths.get();
    case cudnn::kUidPadLenK: return static_cast<int32_t*>(plan.pad_lengths.get()) + p.batch;
  }
  return nullptr;
}

std::string label(const AttnParams& p, SdpaPass pass) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "cudnn %s launch (b%d h%d/%d q%d k%d d%d)", is_bwd(pass) ? "bwd" : "fwd", p.batch,
                p.heads, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim);
  return buf;
}

}  // namespace

int64_t workspace_bytes(const AttnParams& p, SdpaPass pass) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  const SdpaPlan* plan = plan_for(p, pass, &dev, &why);
  return plan ? plan->workspace_bytes : 0;
}

const char* unsupported(const AttnParams& p, SdpaPass pass) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  return plan_for(p, pass, &dev, &why) ? nullptr : why;
}

bool plan_info(const AttnParams& p, SdpaPass pass, PlanInfo* out) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  const SdpaPlan* plan = plan_for(p, pass, &dev, &why);
  if (!plan) return false;
  out->engine_index = plan->engine_index;
  out->workspace_bytes = plan->workspace_bytes;
  out->nondeterministic = plan->nondeterministic;
  out->padding_mask = plan->pad_lengths != nullptr;
  return true;
}

int launch(const AttnParams& p, SdpaPass pass, void* stream) {
  cudnn::Device* dev = nullptr;
  const char* why = nullptr;
  const SdpaPlan* plan = plan_for(p, pass, &dev, &why);
  if (plan == nullptr) {
    std::fprintf(stderr, "%s refused: %s\n", label(p, pass).c_str(), why);
    return int(cudaErrorNotSupported);
  }
  if (plan->workspace_bytes > 0 && (p.workspace == nullptr || p.workspace_bytes < plan->workspace_bytes)) {
    std::fprintf(stderr, "%s: plan needs %lld workspace bytes, params give %lld\n", label(p, pass).c_str(),
                 (long long)plan->workspace_bytes, (long long)p.workspace_bytes);
    return int(cudaErrorInvalidValue);
  }
  if (is_bwd(pass) && (!p.o || !p.lse || !p.dout || !p.dq || !p.dk || !p.dv)) {
    std::fprintf(stderr, "%s: O, LSE, dO, dQ, dK and dV must all be given\n", label(p, pass).c_str());
    return int(cudaErrorInvalidValue);
  }
  Scalars v;
  v.scale = p.softmax_scale, v.seqlen_k = p.seqlen_k, v.seqlen_q = p.seqlen_q;
  std::vector<void*> pointers;
  for (int64_t uid : plan->uids) pointers.push_back(pointer_for(uid, p, *plan, v));
  void* cudnn_workspace = p.workspace ? static_cast<char*>(p.workspace) + plan->cudnn_workspace_offset : nullptr;
  std::string error;
  const int rc = cudnn::execute(*dev, *plan, pointers, cudnn_workspace, stream, &error);
  if (rc != int(cudaSuccess)) std::fprintf(stderr, "%s: %s\n", label(p, pass).c_str(), error.c_str());
  return rc;
}

const char* runtime_version() {
  static const std::string v = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      return std::string();
    }
    return cudnn::version_string(cudnnGetVersion());
  }();
  return v.c_str();
}

}  // namespace fa::cudnn_sdpa
#endif  // FA_BENCH_HAVE_CUDNN
