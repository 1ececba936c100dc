#include "core/distribution.h"

namespace fa {

namespace {
constexpr Distribution kDistributions[] = {Distribution::normal, Distribution::uniform, Distribution::adversarial,
                                           Distribution::outliers};
}  // namespace

std::string_view to_string(Distribution d) {
  switch (d) {
    case Distribution::normal: return "normal";
    case Distribution::uniform: return "uniform";
    case Distribution::adversarial: return "adversarial";
    case Distribution::outliers: return "outliers";
  }
  return "?";
}

std::optional<Distribution> parse_distribution(std::string_view s) {
  for (Distribution d : kDistributions)
    if (s == to_string(d)) return d;
  return std::nullopt;
}

std::string distribution_names() {
  std::string out;
  for (Distribution d : kDistributions) out += (out.empty() ? "" : ", ") + std::string(to_string(d));
  return out;
}

}  // namespace fa
