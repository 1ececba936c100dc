#include "core/result.h"

#include <fmt/format.h>

namespace fa {

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::unsupported: return "unsupported";
    case Status::oom: return "oom";
    case Status::error: return "error";
    case Status::fail: return "fail";
  }
  return "?";
}

std::optional<Status> parse_status(std::string_view s) {
  for (Status st : {Status::ok, Status::unsupported, Status::oom, Status::error, Status::fail})
    if (s == to_string(st)) return st;
  return std::nullopt;
}

// Every problem field, named as in the CLI/JSON, so two runs pair up only when
// kernel, shape and pass agree exactly (a bwd and a fwd+bwd row share their
// kernel). softmax_scale is the scale used (scale_f64), in fmt's shortest
// round-trip form, which is stable across runs. The FP8 settings follow only
// where the row has them (e4m3), the distribution only where the row names one
// (fa-check's), so every other row's key is as it always was.
std::string Result::key() const {
  const AttnProblem& p = problem;
  std::string k = fmt::format(
      "{} batch={} heads={} heads_kv={} seqlen_q={} seqlen_k={} head_dim={} causal={} dtype={} "
      "softmax_scale={} pass={}",
      kernel, p.batch, p.heads, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, p.causal ? 1 : 0,
      to_string(p.dtype), p.scale_f64(), to_string(pass));
  if (fp8) k += fmt::format(" fp8_scaling={} fp8_hadamard={}", to_string(fp8->fp8_scaling), fp8->fp8_hadamard ? 1 : 0);
  if (distribution) k += fmt::format(" distribution={}", to_string(*distribution));
  return k;
}

void share_checked_rows(Result& r) {
  if (!r.grad_errors || !r.errors) return;
  r.grad_errors->rows_checked = r.errors->rows_checked;
  r.grad_errors->sampled = r.errors->sampled;
}

}  // namespace fa
