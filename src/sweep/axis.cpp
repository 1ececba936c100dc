#include "sweep/axis.h"

#include <charconv>
#include <climits>

#include <fmt/format.h>

#include "core/errors.h"
#include "sweep/values.h"

namespace fa {

namespace {

// A sweep with more values on one axis than this is almost certainly a typo
// ("1:100000:+1", a generated list gone wrong).
constexpr size_t kMaxAxisValues = 4096;
constexpr int kMaxBlock = 4096;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
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

void push_checked(std::vector<int>& out, int64_t v, std::string_view what, std::string_view whole) {
  out.push_back(int(v));
  if (out.size() > kMaxAxisValues)
    throw UsageError(fmt::format("{}: '{}' gives more than {} values; expected at most {} per axis", what,
                                 whole.size() > 64 ? std::string(whole.substr(0, 60)) + "..." : std::string(whole),
                                 kMaxAxisValues, kMaxAxisValues));
}

void append_range(std::string_view item, std::string_view what, std::string_view whole, int lo, int hi,
                  std::vector<int>& out) {
  auto parts = split(item, ':');
  if (parts.size() != 3)
    throw UsageError(fmt::format(
        "{}: range '{}' must be start:stop:xK or start:stop:+K (e.g. 512:16384:x2)", what, item));
  int64_t start = parse_integer(parts[0], what, lo, hi);
  int64_t stop = parse_integer(parts[1], what, lo, hi);
  std::string_view step = trim(parts[2]);
  if (step.empty() || (step[0] != 'x' && step[0] != '+'))
    throw UsageError(fmt::format("{}: range step '{}' must start with x (multiply) or + (add), "
                                 "e.g. 512:16384:x2",
                                 what, step));
  int64_t k = parse_integer(step.substr(1), what, INT_MIN, INT_MAX);
  if (start > stop)
    throw UsageError(fmt::format("{}: range '{}' has start {} > stop {}", what, item, start, stop));
  if (step[0] == 'x' && (k < 2 || start <= 0))
    throw UsageError(fmt::format(
        "{}: multiplicative range '{}' needs a factor >= 2 and a start > 0", what, item));
  if (step[0] == '+' && k < 1)
    throw UsageError(fmt::format("{}: additive range '{}' needs a step >= 1", what, item));
  // start, stop and k are ints, so v * k and v + k stay far inside int64.
  for (int64_t v = start; v <= stop; v = step[0] == 'x' ? v * k : v + k) push_checked(out, v, what, whole);
}

template <typename T, typename Show>
void reject_duplicates(const std::vector<T>& vals, std::string_view what, std::string_view whole, Show show) {
  for (size_t i = 0; i < vals.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (vals[i] == vals[j])
        throw UsageError(fmt::format("{}: {} appears twice in '{}'; expected each value once (a "
                                     "duplicate would give two rows with the same key)",
                                     what, show(vals[i]), whole));
}

}  // namespace

std::vector<int> parse_int_axis(std::string_view text, std::string_view what, int lo, int hi) {
  std::vector<int> out;
  if (trim(text).empty())
    throw UsageError(fmt::format("{}: empty value; expected a list or range of integers, e.g. 512:16384:x2", what));
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    if (item.empty()) throw UsageError(fmt::format("{}: empty entry in '{}'", what, text));
    if (item.find(':') != std::string_view::npos)
      append_range(item, what, text, lo, hi, out);
    else
      push_checked(out, parse_integer(item, what, lo, hi), what, text);
  }
  reject_duplicates(out, what, text, [](int v) { return std::to_string(v); });
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
  reject_duplicates(out, what, text, [](bool b) { return b ? "true" : "false"; });
  return out;
}

std::vector<std::string> split_list(std::string_view text, std::string_view what) {
  std::vector<std::string> out;
  if (trim(text).empty()) throw UsageError(fmt::format("{}: empty value", what));
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    if (item.empty()) throw UsageError(fmt::format("{}: empty entry in '{}'", what, text));
    out.emplace_back(item);
    if (out.size() > kMaxAxisValues)
      throw UsageError(fmt::format("{}: more than {} entries", what, kMaxAxisValues));
  }
  return out;
}

std::vector<Tile> parse_block_list(std::string_view text, std::string_view what) {
  std::vector<Tile> out;
  const std::string accepted = "expected MxN, e.g. 128x64, or auto";
  for (const std::string& item : split_list(text, what)) {
    // A lone "auto" is taken before this list (sweep/config.cpp); in a list it would
    // mean "each problem's tile and these too", which no row can be.
    if (item == "auto")
      throw UsageError(fmt::format("{}: 'auto' stands alone (it picks each problem's tile), not in a list of "
                                   "tiles: '{}'; give auto or MxN tiles, e.g. 128x64,128x128",
                                   what, text));
    auto parts = split(item, 'x');
    if (parts.size() != 2 || trim(parts[0]).empty() || trim(parts[1]).empty())
      throw UsageError(fmt::format("{}: '{}' is not a tile; {}", what, item, accepted));
    Tile t;
    t.block_m = int(parse_integer(parts[0], what, 1, kMaxBlock));
    t.block_n = int(parse_integer(parts[1], what, 1, kMaxBlock));
    out.push_back(t);
  }
  reject_duplicates(out, what, text, [](const Tile& t) { return t.str(); });
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
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v <= 0 || v > INT64_MAX / 4 / mult)
    throw UsageError(fmt::format("{}: '{}' is not a size; expected a positive number of bytes with an "
                                 "optional K, M, G or T, e.g. 8G or 512M",
                                 what, text));
  return v * mult;
}

}  // namespace fa
