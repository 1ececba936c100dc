// The one missing-value convention of the data files (docs/OUTPUTS.md): a value
// that was not measured or does not apply is absent, null in JSON and an empty
// cell in CSV, never 0, -1 or a "nan" string standing for it. Result keeps its
// sentinels in C++ (0 TFLOP/s when not timed, -1 for an unknown clock, a 0 tile
// field for "not applicable"); these say which values stand for "absent", so the
// JSON and CSV writers and readers agree.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"

namespace fa::row_values {

// Throughput figures exist only for a row that was timed.
inline std::optional<double> tflops(const Result& r) {
  return r.timing && r.tflops > 0 ? std::optional<double>(r.tflops) : std::nullopt;
}
inline std::optional<double> matmul_fraction(const Result& r) {
  return r.timing && r.matmul_fraction > 0 ? std::optional<double>(r.matmul_fraction) : std::nullopt;
}
inline std::optional<double> model_bandwidth_gbps(const Result& r) {
  return r.timing && r.model_bandwidth_gbps > 0 ? std::optional<double>(r.model_bandwidth_gbps) : std::nullopt;
}
// 0 and 0: no model (cuDNN's backward, a row for a kernel that does not exist).
inline std::optional<Traffic> traffic_model(const Result& r) {
  return r.traffic_model.total() > 0 ? std::optional<Traffic>(r.traffic_model) : std::nullopt;
}
// -1: the back end cannot say.
inline std::optional<int64_t> peak_extra_bytes(const Result& r) {
  return r.peak_extra_bytes >= 0 ? std::optional<int64_t>(r.peak_extra_bytes) : std::nullopt;
}
// -1: no clock reading (cpu, or NVML unavailable).
inline std::optional<int> clock_mhz(int mhz) { return mhz > 0 ? std::optional<int>(mhz) : std::nullopt; }
// 0: the variant has no such tile parameter (cpu.standard, cuDNN, warps of a CPU kernel).
inline std::optional<int> tile_field(int v) { return v > 0 ? std::optional<int>(v) : std::nullopt; }
// "": no reason, no measured-traffic source, no forward partner (a fwd row).
inline std::optional<std::string> text(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

}  // namespace fa::row_values
