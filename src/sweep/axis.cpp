#include "sweep/axis.h"

#include <charconv>
#include <climits>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa {

namespace {

// A sweep with more points than this is almost certainly a typo ("1:100000:+1").
constexpr size_t kMaxAxisValues = 4096;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int64_t parse_i64(std::string_view s, std::string_view what, std::string_view whole) {
  s = trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    throw UsageError(fmt::format("{}: '{}' is not an integer (in '{}')", what, s, whole));
  if (v > INT_MAX || v < INT_MIN)
    throw UsageError(fmt::format("{}: {} is out of range (in '{}')", what, v, whole));
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos
                                                                 : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

void append_range(std::string_view item, std::string_view what, std::string_view whole,
                  std::vector<int>& out) {
  auto parts = split(item, ':');
  if (parts.size() != 3)
    throw UsageError(fmt::format(
        "{}: range '{}' must be start:stop:xK or start:stop:+K (e.g. 512:16384:x2)", what, item));
  int64_t start = parse_i64(parts[0], what, whole);
  int64_t stop = parse_i64(parts[1], what, whole);
  std::string_view step = trim(parts[2]);
  if (step.empty() || (step[0] != 'x' && step[0] != '+'))
    throw UsageError(fmt::format("{}: range step '{}' must start with x (multiply) or + (add), "
                                 "e.g. 512:16384:x2",
                                 what, step));
  int64_t k = parse_i64(step.substr(1), what, whole);
  if (start > stop)
    throw UsageError(fmt::format("{}: range '{}' has start {} > stop {}", what, item, start, stop));
  if (step[0] == 'x' && (k < 2 || start <= 0))
    throw UsageError(fmt::format(
        "{}: multiplicative range '{}' needs a factor >= 2 and a start > 0", what, item));
  if (step[0] == '+' && k < 1)
    throw UsageError(fmt::format("{}: additive range '{}' needs a step >= 1", what, item));
  for (int64_t v = start; v <= stop; v = step[0] == 'x' ? v * k : v + k) {
    out.push_back(int(v));
    if (out.size() > kMaxAxisValues)
      throw UsageError(fmt::format("{}: '{}' gives more than {} values", what, whole,
                                   kMaxAxisValues));
  }
}

}  // namespace

std::vector<int> parse_int_axis(std::string_view text, std::string_view what) {
  std::vector<int> out;
  if (trim(text).empty()) throw UsageError(fmt::format("{}: empty value", what));
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    if (item.empty()) throw UsageError(fmt::format("{}: empty entry in '{}'", what, text));
    if (item.find(':') != std::string_view::npos)
      append_range(item, what, text, out);
    else
      out.push_back(int(parse_i64(item, what, text)));
  }
  return out;
}

std::vector<bool> parse_bool_axis(std::string_view text, std::string_view what) {
  std::vector<bool> out;
  for (std::string_view item : split_list(text, what)) {
    if (item == "both") {
      out.push_back(false);
      out.push_back(true);
    } else if (item == "true" || item == "1") {
      out.push_back(true);
    } else if (item == "false" || item == "0") {
      out.push_back(false);
    } else {
      throw UsageError(
          fmt::format("{}: '{}' is not one of true, false, both (in '{}')", what, item, text));
    }
  }
  return out;
}

std::vector<std::string> split_list(std::string_view text, std::string_view what) {
  std::vector<std::string> out;
  if (trim(text).empty()) throw UsageError(fmt::format("{}: empty value", what));
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    if (item.empty()) throw UsageError(fmt::format("{}: empty entry in '{}'", what, text));
    out.emplace_back(item);
  }
  return out;
}

std::vector<Tile> parse_block_list(std::string_view text, std::string_view what) {
  std::vector<Tile> out;
  for (const std::string& item : split_list(text, what)) {
    auto x = item.find('x');
    if (x == std::string::npos)
      throw UsageError(fmt::format("{}: '{}' is not BLOCK_MxBLOCK_N (e.g. 128x64) or auto", what,
                                   item));
    Tile t;
    t.block_m = int(parse_i64(std::string_view(item).substr(0, x), what, text));
    t.block_n = int(parse_i64(std::string_view(item).substr(x + 1), what, text));
    if (t.block_m <= 0 || t.block_n <= 0)
      throw UsageError(fmt::format("{}: block sizes must be > 0 (got '{}')", what, item));
    out.push_back(t);
  }
  return out;
}

int64_t parse_bytes(std::string_view text, std::string_view what) {
  std::string_view s = trim(text);
  int64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': mult = int64_t(1) << 10; break;
      case 'M': case 'm': mult = int64_t(1) << 20; break;
      case 'G': case 'g': mult = int64_t(1) << 30; break;
      case 'T': case 't': mult = int64_t(1) << 40; break;
      default: break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v <= 0)
    throw UsageError(fmt::format("{}: '{}' is not a positive size (e.g. 8G, 512M)", what, text));
  if (v > INT64_MAX / mult) throw UsageError(fmt::format("{}: '{}' is too large", what, text));
  return v * mult;
}

}  // namespace fa
