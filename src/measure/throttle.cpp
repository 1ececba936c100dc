#include "measure/throttle.h"

#include <fmt/format.h>

namespace fa {

std::string throttle_reason(int before, int after) {
  if (before <= 0 || after <= 0) return "";
  if (double(after) >= double(before) * (1.0 - kThrottleDrop)) return "";
  return fmt::format(
      "throttled: SM clock fell from {} to {} MHz while timing (power or thermal cap); the median "
      "mixes full-clock and throttled samples",
      before, after);
}

}  // namespace fa
