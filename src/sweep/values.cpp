#include "sweep/values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string number_text(double v) {
  if (v == std::numeric_limits<double>::max()) return "any";
  if (std::abs(v) >= 1e15 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

}  // namespace

std::string range_text(double lo, double hi, bool lo_open) {
  return fmt::format("{}{}, {}]", lo_open ? "(" : "[", number_text(lo), number_text(hi));
}

int64_t parse_integer(std::string_view text, std::string_view where, int64_t lo, int64_t hi) {
  const std::string_view s = trim(text);
  const std::string expected = fmt::format("expected an integer in {}", range_text(double(lo), double(hi)));
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || (ec != std::errc() && ec != std::errc::result_out_of_range) || p != s.data() + s.size())
    throw UsageError(fmt::format("{}: '{}' is not an integer; {}", where, text, expected));
  if (ec == std::errc::result_out_of_range || v < lo || v > hi)
    throw UsageError(fmt::format("{}: '{}' is out of range; {}", where, text, expected));
  return v;
}

uint64_t parse_unsigned(std::string_view text, std::string_view where) {
  const std::string_view s = trim(text);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || s.front() == '-' || ec == std::errc::invalid_argument || p != s.data() + s.size())
    throw UsageError(fmt::format("{}: '{}' is not an unsigned integer; expected 0 to {}", where, text,
                                 std::numeric_limits<uint64_t>::max()));
  if (ec == std::errc::result_out_of_range)
    throw UsageError(fmt::format("{}: '{}' is out of range; expected 0 to {}", where, text,
                                 std::numeric_limits<uint64_t>::max()));
  return v;
}

double parse_real(std::string_view text, std::string_view where, double lo, double hi, bool lo_open) {
  const std::string_view s = trim(text);
  const std::string expected = fmt::format("expected a number in {}", range_text(lo, hi, lo_open));
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || (ec != std::errc() && ec != std::errc::result_out_of_range) || p != s.data() + s.size())
    throw UsageError(fmt::format("{}: '{}' is not a number; {}", where, text, expected));
  if (ec == std::errc::result_out_of_range || !std::isfinite(v))
    throw UsageError(fmt::format("{}: '{}' is not a finite number; {}", where, text, expected));
  if (v < lo || (lo_open && v == lo) || v > hi)
    throw UsageError(fmt::format("{}: '{}' is out of range; {}", where, text, expected));
  return v;
}

bool parse_boolean(std::string_view text, std::string_view where) {
  const std::string_view s = trim(text);
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0") return false;
  throw UsageError(fmt::format("{}: '{}' is not a boolean; expected true or false", where, text));
}

std::string parse_nonempty(std::string_view text, std::string_view where, std::string_view what) {
  if (trim(text).empty()) throw UsageError(fmt::format("{}: empty value; expected {}", where, what));
  return std::string(text);
}

std::string Shard::str() const { return fmt::format("{}/{}", index, count); }

Shard parse_shard(std::string_view text, std::string_view where) {
  const std::string expected =
      fmt::format("expected K/N, the K-th of N slices, with 1 <= K <= N <= {}, e.g. 2/4", kMaxShards);
  const std::string_view s = trim(text);
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || s.find('/', slash + 1) != std::string_view::npos)
    throw UsageError(fmt::format("{}: '{}' is not a shard; {}", where, text, expected));
  int64_t part[2] = {0, 0};
  const std::string_view texts[2] = {s.substr(0, slash), s.substr(slash + 1)};
  for (int i = 0; i < 2; ++i) {
    // Digits only: no sign, blank or exponent inside "K/N".
    const std::string_view t = texts[i];
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), part[i]);
    if (t.empty() || t.front() == '-' || t.front() == '+' || (ec != std::errc() && ec != std::errc::result_out_of_range) ||
        p != t.data() + t.size())
      throw UsageError(fmt::format("{}: '{}' is not a shard; {}", where, text, expected));
    if (ec == std::errc::result_out_of_range) part[i] = INT64_MAX;
  }
  if (part[1] < 1 || part[1] > kMaxShards || part[0] < 1 || part[0] > part[1])
    throw UsageError(fmt::format("{}: '{}' is out of range; {}", where, text, expected));
  return Shard{int(part[0]), int(part[1])};
}

}  // namespace fa

namespace fa {

std::string DeviceList::str() const {
  if (all) return "all";
  std::string s;
  for (int i : indices) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}

DeviceList parse_devices(std::string_view text, std::string_view where) {
  const std::string expected =
      fmt::format("expected device numbers 0 to {}, each once (e.g. 0,1), or all", kMaxDevices - 1);
  const std::string_view s = trim(text);
  if (s.empty()) throw UsageError(fmt::format("{}: empty value; {}", where, expected));
  DeviceList out;
  if (s == "all") {
    out.all = true;
    return out;
  }
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string_view item = trim(s.substr(start, comma - start));
    if (item.empty()) throw UsageError(fmt::format("{}: empty entry in '{}'; {}", where, text, expected));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    // Digits only: "-1", "+1", "1.0" and "0x1" are no device numbers.
    if (item.front() == '-' || item.front() == '+' || (ec != std::errc() && ec != std::errc::result_out_of_range) ||
        p != item.data() + item.size())
      throw UsageError(fmt::format("{}: '{}' is not a device number (in '{}'); {}", where, item, text, expected));
    if (ec == std::errc::result_out_of_range || v >= kMaxDevices)
      throw UsageError(fmt::format("{}: '{}' is out of range (in '{}'); {}", where, item, text, expected));
    if (std::find(out.indices.begin(), out.indices.end(), int(v)) != out.indices.end())
      throw UsageError(fmt::format("{}: device {} appears twice in '{}'; {}", where, v, text, expected));
    out.indices.push_back(int(v));
    start = comma + 1;
  }
  return out;
}

}  // namespace fa
