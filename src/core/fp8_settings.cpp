#include "core/fp8_settings.h"

#include <fmt/format.h>

namespace fa {

std::string_view to_string(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::tensor: return "tensor";
    case Fp8Scaling::head: return "head";
    case Fp8Scaling::block: return "block";
  }
  return "?";
}

std::optional<Fp8Scaling> parse_fp8_scaling(std::string_view s) {
  for (Fp8Scaling m : {Fp8Scaling::tensor, Fp8Scaling::head, Fp8Scaling::block})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

std::string describe(const std::optional<Fp8Settings>& s) {
  if (!s) return "no FP8 settings";
  return fmt::format("fp8_scaling {}, fp8_hadamard {}", to_string(s->fp8_scaling), s->fp8_hadamard);
}

}  // namespace fa
