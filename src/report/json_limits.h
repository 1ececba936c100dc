// Parsing JSON the user hands us (config files, check suites, results files)
// without trusting it: nesting depth is bounded by a cheap scan before
// nlohmann/json builds (and later copies and destroys) the tree recursively, so
// a 100 000-deep file is an error, not a stack overflow; every nlohmann
// exception (syntax, a number out of range such as 1e400) becomes a UsageError
// naming the file, line, column and the last key before the problem.
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace fa {

// Deeper than any file we write (results: 5 levels) by a wide margin.
constexpr int kMaxJsonDepth = 64;

// `what` names the file in messages ("configs/x.json").
nlohmann::json parse_json_bounded(const std::string& text, const std::string& what);

// 1-based line and column of a byte offset, and the last "key": before it.
struct TextPosition {
  size_t line = 1, col = 1;
};
TextPosition position_of(const std::string& text, size_t byte);
std::string last_key_before(const std::string& text, size_t byte);

// nlohmann's dump, with bytes that are not UTF-8 (a file name the user chose)
// replaced by U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json&, int indent = 2);

}  // namespace fa
