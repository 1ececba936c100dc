// The few types every layer shares: the problem, the tile, the enums naming
// dtype / family / back end. One name per concept: the same words are used in
// CLI flags, JSON keys, CSV columns and these fields.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fa {

// e4m3: OCP FP8 E4M3FN inputs (Q, K, V as codes with descale factors, made by
// check/fp8_quant.h); the output's dtype is the kernel's (KernelVariant::out_dtype).
enum class DType { f16, bf16, f32, e4m3 };
enum class Family { standard, fa1, fa2, fa3, cudnn };
enum class Backend { cpu, cuda };
// Which pass a row measures: the forward, the backward (dQ, dK, dV from dO, with
// the forward's O and LSE as inputs), or both timed together. A kernel variant
// implements fwd or bwd; a fwd_bwd row runs a bwd variant after its forward.
enum class Pass { fwd, bwd, fwd_bwd };

std::string_view to_string(DType);
std::string_view to_string(Family);
std::string_view to_string(Backend);
std::string_view to_string(Pass);  // "fwd", "bwd", "fwd+bwd"
std::optional<DType> parse_dtype(std::string_view);    // "bf16", "fp16"/"f16", "fp32"/"f32", "e4m3"
std::optional<Family> parse_family(std::string_view);
std::optional<Backend> parse_backend(std::string_view);
std::optional<Pass> parse_pass(std::string_view);
int dtype_bytes(DType);  // bytes of one stored element: e4m3 1
// The dtype a forward writes O in: the inputs' own, bf16 for e4m3 (every e4m3
// forward in the registry writes bf16 O; the tolerance rule rounds O to it).
DType output_dtype(DType);
// A pass's FLOPs over the forward's, by the FlashAttention convention: the
// backward's five matmuls against the forward's two make it 2.5, fwd+bwd 3.5.
double flops_factor(Pass);

// One point of a sweep.
struct AttnProblem {
  int batch = 1, heads = 1, heads_kv = 1;  // heads % heads_kv == 0 (GQA / MQA)
  int seqlen_q = 1, seqlen_k = 1, head_dim = 64;
  bool causal = false;
  DType dtype = DType::bf16;
  double softmax_scale = 0;  // 0 means 1/sqrt(head_dim)

  // The scale the kernels apply: float32, as AttnParams carries it.
  float scale() const;
  // The exact scale: 1/sqrt(head_dim) computed in double, or softmax_scale as
  // given. The float64 reference uses it and every result row records it.
  double scale_f64() const;
  // Back from a recorded scale_f64(): the default's exact value reads as 0, so
  // a row read from a file equals the problem that made it.
  void set_recorded_scale(double recorded);
  // FLOPs by the FlashAttention convention: 4*b*h*Nq*Nk*d, causal halved.
  double flops() const;
  // "" when the shape is valid, else why not (used for exit-code-2 errors).
  std::string invalid_reason() const;
  // Number of keys query row i sees (causal is bottom-right aligned:
  // row i sees keys j <= i + seqlen_k - seqlen_q). May be 0.
  int64_t keys_seen(int64_t row) const;
  std::string describe() const;  // "b4 h16/16 q2048 k2048 d128 bf16 causal"
  bool operator==(const AttnProblem&) const = default;
};

// What a variant was compiled with. 0 fields mean "not applicable".
struct Tile {
  int block_m = 0, block_n = 0, warps = 0, stages = 0;
  std::string str() const;  // "128x64" (+ ".w4.s2" where set)
  bool operator==(const Tile&) const = default;
};

}  // namespace fa
