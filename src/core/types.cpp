#include "core/types.h"

#include <cmath>
#include <fmt/format.h>

namespace fa {

std::string_view to_string(DType d) {
  switch (d) {
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::f32: return "fp32";
    case DType::e4m3: return "e4m3";
  }
  return "?";
}
std::string_view to_string(Family f) {
  switch (f) {
    case Family::standard: return "standard";
    case Family::fa1: return "fa1";
    case Family::fa2: return "fa2";
    case Family::fa3: return "fa3";
    case Family::cudnn: return "cudnn";
  }
  return "?";
}
std::string_view to_string(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }
std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::fwd: return "fwd";
    case Pass::bwd: return "bwd";
    case Pass::fwd_bwd: return "fwd+bwd";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return DType::f16;
  if (s == "fp32" || s == "f32" || s == "float32") return DType::f32;
  if (s == "e4m3") return DType::e4m3;
  return std::nullopt;
}
std::optional<Family> parse_family(std::string_view s) {
  for (Family f : {Family::standard, Family::fa1, Family::fa2, Family::fa3, Family::cudnn})
    if (s == to_string(f)) return f;
  return std::nullopt;
}
std::optional<Backend> parse_backend(std::string_view s) {
  if (s == "cpu") return Backend::cpu;
  if (s == "cuda" || s == "gpu") return Backend::cuda;
  return std::nullopt;
}
std::optional<Pass> parse_pass(std::string_view s) {
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd})
    if (s == to_string(p)) return p;
  return std::nullopt;
}
int dtype_bytes(DType d) { return d == DType::f32 ? 4 : d == DType::e4m3 ? 1 : 2; }
DType output_dtype(DType d) { return d == DType::e4m3 ? DType::bf16 : d; }
double flops_factor(Pass p) {
  switch (p) {
    case Pass::fwd: return 1.0;
    case Pass::bwd: return 2.5;
    case Pass::fwd_bwd: return 3.5;
  }
  return 1.0;
}

float AttnProblem::scale() const {
  return softmax_scale > 0 ? float(softmax_scale) : 1.0f / std::sqrt(float(head_dim));
}

double AttnProblem::scale_f64() const {
  return softmax_scale > 0 ? softmax_scale : 1.0 / std::sqrt(double(head_dim));
}

void AttnProblem::set_recorded_scale(double recorded) {
  softmax_scale = recorded == 1.0 / std::sqrt(double(head_dim)) ? 0 : recorded;
}

double AttnProblem::flops() const {
  double f = 4.0 * batch * heads * double(seqlen_q) * double(seqlen_k) * head_dim;
  return causal ? f / 2 : f;
}

std::string AttnProblem::invalid_reason() const {
  if (batch <= 0) return fmt::format("batch must be > 0 (got {})", batch);
  if (heads <= 0) return fmt::format("heads must be > 0 (got {})", heads);
  if (heads_kv <= 0) return fmt::format("heads_kv must be > 0 (got {})", heads_kv);
  if (heads % heads_kv != 0)
    return fmt::format("heads ({}) must be divisible by heads_kv ({})", heads, heads_kv);
  if (seqlen_q <= 0) return fmt::format("seqlen_q must be > 0 (got {})", seqlen_q);
  if (seqlen_k <= 0) return fmt::format("seqlen_k must be > 0 (got {})", seqlen_k);
  if (head_dim <= 0 || head_dim > 1024)
    return fmt::format("head_dim must be in 1..1024 (got {})", head_dim);
  // The product behind the FLOP count and every modelled byte count: past 2^52
  // (4.5e15, over 100x a 1M-token, 32-head forward) those no longer fit int64.
  const double work = double(batch) * heads * double(seqlen_q) * double(seqlen_k) * head_dim;
  if (work > 0x1p52)
    return fmt::format("batch*heads*seqlen_q*seqlen_k*head_dim = {:.3g} is beyond 2^52 = {:.3g}, more than any "
                       "count here can hold",
                       work, 0x1p52);
  if (!(softmax_scale >= 0) || std::isinf(softmax_scale))
    return fmt::format("softmax_scale must be finite and >= 0 (got {})", softmax_scale);
  return "";
}

int64_t AttnProblem::keys_seen(int64_t row) const {
  if (!causal) return seqlen_k;
  int64_t last = row + int64_t(seqlen_k) - seqlen_q;  // last visible key index
  if (last < 0) return 0;
  return std::min<int64_t>(last + 1, seqlen_k);
}

std::string AttnProblem::describe() const {
  return fmt::format("b{} h{}/{} q{} k{} d{} {}{}", batch, heads, heads_kv, seqlen_q, seqlen_k,
                     head_dim, to_string(dtype), causal ? " causal" : "");
}

std::string Tile::str() const {
  if (block_m == 0 && block_n == 0) return "-";
  std::string s = fmt::format("{}x{}", block_m, block_n);
  if (warps) s += fmt::format(".w{}", warps);
  if (stages) s += fmt::format(".s{}", stages);
  return s;
}

}  // namespace fa
