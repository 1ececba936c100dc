// How an e4m3 point's float inputs become FP8 codes (check/fp8_inputs.h does
// it): one descale per tensor, per (batch, head) or per block of sequence rows,
// and whether Q and K are rotated by a Hadamard transform first. Inputs
// quantized another way are another measurement, so every e4m3 row carries the
// settings and they are part of its key (core/result.h). The fields are named
// as the flags (--fp8-scaling, --fp8-hadamard), the config keys, the JSON keys
// and the CSV columns.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace fa {

enum class Fp8Scaling { tensor, head, block };
std::string_view to_string(Fp8Scaling);
std::optional<Fp8Scaling> parse_fp8_scaling(std::string_view);

struct Fp8Settings {
  Fp8Scaling fp8_scaling = Fp8Scaling::tensor;
  bool fp8_hadamard = false;  // Q and K rotated over head_dim before quantization
  bool operator==(const Fp8Settings&) const = default;
};

// "fp8_scaling head, fp8_hadamard true", or "no FP8 settings" (a row that is
// not e4m3): for messages.
std::string describe(const std::optional<Fp8Settings>&);

}  // namespace fa
