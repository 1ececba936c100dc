// The input distributions a check or a sweep draws Q, K, V from
// (check/inputs.h generates them; docs/MEASUREMENT.md, Inputs). A core value
// type because a result row may name its inputs (Result::distribution).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace fa {

enum class Distribution { normal, uniform, adversarial, outliers };
std::string_view to_string(Distribution);
std::optional<Distribution> parse_distribution(std::string_view);
// Every name parse_distribution takes, for messages: "normal, uniform, ...".
std::string distribution_names();

}  // namespace fa
