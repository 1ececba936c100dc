#include "check/user_inputs.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "check/npy.h"
#include "core/errors.h"

namespace fa {

namespace {

NpyArray load_4d(const std::string& dir, const char* name) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UsageError(fmt::format("{}: not found (--inputs expects q.npy, k.npy and v.npy in {})", path, dir));
  NpyArray a = load_npy(path);
  if (a.shape.size() != 4)
    throw UsageError(fmt::format("{}: expected 4 dimensions [batch, seqlen, heads, head_dim], got {}", path,
                                 a.shape.size()));
  for (int64_t s : a.shape)
    if (s <= 0 || s > (int64_t(1) << 30))
      throw UsageError(fmt::format("{}: dimension {} out of range; expected 1 to 2^30", path, s));
  // A NaN or Inf in the user's tensor is bad input, not a kernel failure.
  for (size_t i = 0; i < a.data.size(); ++i)
    if (!std::isfinite(a.data[i])) {
      int64_t idx[4], rest = int64_t(i);
      for (int d = 3; d >= 0; --d) idx[d] = rest % a.shape[d], rest /= a.shape[d];
      throw UsageError(fmt::format("{}: element {} (index [{}, {}, {}, {}]) is {}; expected finite values", path,
                                   i, idx[0], idx[1], idx[2], idx[3], a.data[i]));
    }
  return a;
}

}  // namespace

UserInputs load_user_inputs(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(fmt::format("'{}' is not a folder; expected one holding q.npy, k.npy and v.npy", dir));
  NpyArray q = load_4d(dir, "q.npy"), k = load_4d(dir, "k.npy"), v = load_4d(dir, "v.npy");
  if (k.shape != v.shape)
    throw UsageError(fmt::format("{}: k.npy and v.npy must have the same shape (k [{}, {}, {}, {}], v.npy "
                                 "[{}, {}, {}, {}])",
                                 dir, k.shape[0], k.shape[1], k.shape[2], k.shape[3], v.shape[0], v.shape[1],
                                 v.shape[2], v.shape[3]));
  if (q.shape[0] != k.shape[0] || q.shape[3] != k.shape[3])
    throw UsageError(fmt::format("{}: q.npy and k.npy must agree in batch and head_dim "
                                 "(q [{}, {}, {}, {}], k [{}, {}, {}, {}])",
                                 dir, q.shape[0], q.shape[1], q.shape[2], q.shape[3], k.shape[0], k.shape[1],
                                 k.shape[2], k.shape[3]));
  if (q.shape[2] % k.shape[2] != 0)
    throw UsageError(fmt::format("{}: q's heads ({}) must be a multiple of k's heads ({})", dir, q.shape[2],
                                 k.shape[2]));
  UserInputs u;
  u.batch = int(q.shape[0]);
  u.seqlen_q = int(q.shape[1]);
  u.heads = int(q.shape[2]);
  u.head_dim = int(q.shape[3]);
  u.seqlen_k = int(k.shape[1]);
  u.heads_kv = int(k.shape[2]);
  u.tensors.q = std::move(q.data);
  u.tensors.k = std::move(k.data);
  u.tensors.v = std::move(v.data);
  return u;
}

void save_outputs_npy(const std::string& dir, const std::string& stem, const AttnProblem& p,
                      const HostOutputs& out) {
  std::filesystem::create_directories(dir);
  const auto base = std::filesystem::path(dir) / stem;
  save_npy(base.string() + ".o.npy", {p.batch, p.seqlen_q, p.heads, p.head_dim}, out.o);
  save_npy(base.string() + ".lse.npy", {p.batch, p.heads, p.seqlen_q}, out.lse);
}

std::string problem_slug(const AttnProblem& p) {
  return fmt::format("b{}_h{}-{}_q{}_k{}_d{}_{}{}", p.batch, p.heads, p.heads_kv, p.seqlen_q, p.seqlen_k,
                     p.head_dim, to_string(p.dtype), p.causal ? "_causal" : "");
}

}  // namespace fa
