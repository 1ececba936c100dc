// Whether the SM clock fell while a row was timed. The H200 drops from 1980 MHz to
// ~1600 under a power or thermal cap on long runs; the median then mixes fast and
// slow samples, so such a row is flagged in its reason (the clock columns keep the
// numbers). A reading of -1 (no NVML) never flags.
#pragma once
#include <string>

namespace fa {

// Clock drops of more than this fraction are flagged.
inline constexpr double kThrottleDrop = 0.05;

// "" when the clock held; otherwise the sentence the row's reason gets.
std::string throttle_reason(int clock_before_mhz, int clock_after_mhz);

}  // namespace fa
