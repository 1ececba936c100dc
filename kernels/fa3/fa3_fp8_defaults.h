// The e4m3 fa3 forward's default tile per head_dim, and its exponentials: the
// tiles kernels/fa3/instances.cmake marks with '*' (the registry's default
// tiles) and fp8_check's `base` variant. No CUDA types, so that a CPU test
// holds the registry to them (tests/test_fa3_fp8_entries.cpp).
// docs/PERF_NOTES.md: fa3-fp8-three-warpgroups (hd128 192 x 128, three consumer
// warpgroups), fa3-fp8-exp2-on-fma (hd64: a quarter of the exponentials on the
// FMA pipe), fa3-fp8-tiles (hd64 128 x 256, hd256 128 x 128). 2 stages everywhere.
#pragma once

namespace fa {

constexpr int fp8_default_block_m(int head_dim) { return head_dim == 128 ? 192 : 128; }
constexpr int fp8_default_block_n(int head_dim) { return head_dim == 64 ? 256 : 128; }
constexpr int fp8_default_poly_every(int head_dim) { return head_dim == 64 ? 4 : 0; }

}  // namespace fa
