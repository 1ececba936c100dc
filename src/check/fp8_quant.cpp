#include "check/fp8_quant.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/e4m3.h"
#include "core/errors.h"
#include "core/parallel.h"

namespace fa {

namespace {
int64_t blocks_per_head(const BshdShape& sh, int64_t block_rows) {
  return (sh.seqlen + block_rows - 1) / block_rows;
}

void check_layout(const BshdShape& sh, Fp8Scaling mode, int64_t block_rows) {
  if (sh.batch <= 0 || sh.seqlen <= 0 || sh.heads <= 0 || sh.head_dim <= 0)
    throw UsageError(fmt::format("fp8 quantization: extents must be positive, got [batch {}, seqlen {}, heads {}, head_dim {}]",
                                 sh.batch, sh.seqlen, sh.heads, sh.head_dim));
  if (mode == Fp8Scaling::block && block_rows <= 0)
    throw UsageError(fmt::format("fp8 quantization: block scaling needs block_rows >= 1, got {}", block_rows));
}
}  // namespace

int64_t fp8_group_count(const BshdShape& sh, Fp8Scaling mode, int64_t block_rows) {
  check_layout(sh, mode, block_rows);
  switch (mode) {
    case Fp8Scaling::tensor: return 1;
    case Fp8Scaling::head: return sh.batch * sh.heads;
    case Fp8Scaling::block: return sh.batch * sh.heads * blocks_per_head(sh, block_rows);
  }
  return 1;
}

int64_t fp8_group_of(const BshdShape& sh, Fp8Scaling mode, int64_t block_rows, int64_t b, int64_t s, int64_t h) {
  switch (mode) {
    case Fp8Scaling::tensor: return 0;
    case Fp8Scaling::head: return b * sh.heads + h;
    case Fp8Scaling::block: return (b * sh.heads + h) * blocks_per_head(sh, block_rows) + s / block_rows;
  }
  return 0;
}

namespace {
// Sequence rows per task of for_each_element: a tensor of 16K tokens x 2048
// channels is 64 tasks per batch, enough to keep 16 threads busy.
constexpr int64_t kRowsPerTask = 256;

// Calls f(element index, group, worker) for every element, on all threads in
// tasks of kRowsPerTask sequence rows (memory order within a task); worker
// indexes per-thread scratch. Every element is visited once, so results that
// do not depend on the order (per-element codes, maxima) are those of one thread.
template <typename F>
void for_each_element(const BshdShape& sh, Fp8Scaling mode, int64_t block_rows, F f) {
  const int64_t chunks = (sh.seqlen + kRowsPerTask - 1) / kRowsPerTask;
  parallel_for(sh.batch * chunks, resolve_threads(0), [&](int64_t task, int worker) {
    const int64_t b = task / chunks, s0 = task % chunks * kRowsPerTask, s1 = std::min(sh.seqlen, s0 + kRowsPerTask);
    int64_t i = ((b * sh.seqlen + s0) * sh.heads) * sh.head_dim;
    for (int64_t s = s0; s < s1; ++s)
      for (int64_t h = 0; h < sh.heads; ++h) {
        const int64_t g = fp8_group_of(sh, mode, block_rows, b, s, h);
        for (int64_t c = 0; c < sh.head_dim; ++c, ++i) f(i, g, worker);
      }
  });
}
}  // namespace

Fp8Tensor quantize_e4m3(const std::vector<float>& x, const BshdShape& sh, Fp8Scaling mode, int64_t block_rows) {
  Fp8Tensor t;
  t.shape = sh;
  t.scaling = mode;
  t.block_rows = mode == Fp8Scaling::block ? block_rows : 0;
  const int64_t groups = fp8_group_count(sh, mode, block_rows);
  if (int64_t(x.size()) != sh.elements())
    throw UsageError(fmt::format("fp8 quantization: {} values for a [{}, {}, {}, {}] tensor ({} expected)", x.size(),
                                 sh.batch, sh.seqlen, sh.heads, sh.head_dim, sh.elements()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i])) continue;
    const int64_t c = int64_t(i) % sh.head_dim, rest = int64_t(i) / sh.head_dim;
    const int64_t h = rest % sh.heads, s = rest / sh.heads % sh.seqlen, b = rest / sh.heads / sh.seqlen;
    throw UsageError(fmt::format("fp8 quantization: {} at [batch {}, row {}, head {}, channel {}]; e4m3 inputs must be finite",
                                 x[i], b, s, h, c));
  }
  // Maxima per worker, then across workers: the same amax whatever the split.
  const size_t n_groups = static_cast<size_t>(groups);
  std::vector<std::vector<double>> amax_of(size_t(resolve_threads(0)), std::vector<double>(n_groups, 0.0));
  for_each_element(sh, mode, t.block_rows, [&](int64_t i, int64_t g, int w) {
    double& a = amax_of[size_t(w)][size_t(g)];
    a = std::max(a, std::fabs(double(x[size_t(i)])));
  });
  std::vector<double> amax(n_groups, 0.0);
  for (const std::vector<double>& part : amax_of)
    for (size_t g = 0; g < n_groups; ++g) amax[g] = std::max(amax[g], part[g]);
  t.descales.resize(size_t(groups));
  std::vector<double> scale(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    const double a = amax[size_t(g)];
    scale[size_t(g)] = a > 0 ? double(kE4m3Max) / a : 1.0;
    t.descales[size_t(g)] = a > 0 ? float(a / double(kE4m3Max)) : 1.0f;
  }
  t.codes.resize(x.size());
  for_each_element(sh, mode, t.block_rows, [&](int64_t i, int64_t g, int) {
    t.codes[size_t(i)] = encode_e4m3(float(double(x[size_t(i)]) * scale[size_t(g)]));
  });
  return t;
}

std::vector<float> dequantize(const Fp8Tensor& t) {
  std::vector<float> x(t.codes.size());
  for_each_element(t.shape, t.scaling, t.block_rows, [&](int64_t i, int64_t g, int) {
    x[size_t(i)] = decode_e4m3(t.codes[size_t(i)]) * t.descales[size_t(g)];
  });
  return x;
}

}  // namespace fa
