#include "measure/throttle.h"

#include <fmt/format.h>

#include "core/result.h"

namespace fa {

std::string throttle_reason(int before, int after, int max_mhz) {
  if (before <= 0 || after <= 0) return "";
  if (double(after) < double(before) * (1.0 - kThrottleDrop))
    return fmt::format(
        "{}: SM clock fell from {} to {} MHz while timing (power or thermal cap); the median "
        "mixes full-clock and throttled samples",
        kThrottledReason, before, after);
  const int low = before < after ? before : after;
  if (max_mhz > 0 && double(low) < double(max_mhz) * (1.0 - kThrottleDrop))
    return fmt::format(
        "{}: SM clock {} -> {} MHz while timing, more than {:g} % below its {} MHz maximum "
        "(power or thermal cap); slower than at full clock",
        kThrottledReason, before, after, kThrottleDrop * 100, max_mhz);
  return "";
}

}  // namespace fa
