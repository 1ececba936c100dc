// Whether a row was timed below full clock. The H200 drops from 1980 MHz to ~1600
// under a power or thermal cap on long runs: a row whose clock fell while it was
// timed mixes fast and slow samples, and a row timed after the drop (the clock
// already low, steady or recovering) is slow throughout. Both are flagged in the
// row's reason (the clock columns keep the numbers). A reading of -1 (no NVML)
// never flags; without the maximum clock only a fall is seen.
#pragma once
#include <string>

namespace fa {

// Clock drops of more than this fraction (during the row, or below the maximum) are flagged.
inline constexpr double kThrottleDrop = 0.05;

// "" when the clock held near its maximum; otherwise the sentence the row's reason gets.
std::string throttle_reason(int clock_before_mhz, int clock_after_mhz, int max_mhz = -1);

}  // namespace fa
