// The shared memory one block may use: on sm_90 (H100, H200), 228 KiB per SM
// less the 1 KiB the driver reserves for each block. Every family's traits
// check their tile's footprint against it.
#pragma once

namespace fa {

inline constexpr int kSmemPerBlockMax = 227 * 1024;

}  // namespace fa
