// The block arithmetic the traffic models share: tile defaults, and which K/V
// blocks a Q block visits under bottom-right causal masking.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/types.h"
#include "cpu/cpu_kernels.h"

namespace fa::traffic {

constexpr int64_t kStatBytes = 4;  // m, l, LSE, D are float32 everywhere

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A variant's tile comes from its family's tile table (kernels/<family>/
// instances.cmake, kernels/cpu/cpu_kernels.h). Without one -- cuDNN picks its own
// tiles, or a caller names no tile -- a family with CPU kernels is modelled at the
// CPU table's default, the others at 128 x 128 (flash-attention's Hopper tile).
constexpr Tile kUntiledModelTile{128, 128, 0, 0};

inline Tile model_tile(Family f, const Tile& t) {
  if (t.block_m > 0 && t.block_n > 0) return t;
  for (const CpuKernelEntry& e : cpu_kernel_entries())
    if (e.family == f && e.tiled) return kCpuDefaultTile;
  return kUntiledModelTile;
}

// Number of K/V blocks Q block i (rows [r0, r0 + rows)) must visit: under
// bottom-right causal alignment its last row sees keys 0 .. last.
inline int64_t visible_kv_blocks(const AttnProblem& p, int64_t r0, int64_t rows, int64_t bn) {
  const int64_t tc = ceil_div(p.seqlen_k, bn);
  if (!p.causal) return tc;
  const int64_t last = r0 + rows - 1 + p.seqlen_k - p.seqlen_q;
  if (last < 0) return 0;
  return std::min(tc, last / bn + 1);
}

// Keys in the first n K/V blocks (the last block may be ragged).
inline int64_t keys_in_blocks(const AttnProblem& p, int64_t n, int64_t bn) {
  return std::min<int64_t>(n * bn, p.seqlen_k);
}

}  // namespace fa::traffic
