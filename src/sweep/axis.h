// Parsing one sweep axis from the text a user types (flag or config string):
//   "512"               one value
//   "512,1024,4096"     a list
//   "512:16384:x2"      start:stop:xK, multiplicative (512, 1024, ..., 16384)
//   "64:256:+64"        start:stop:+K, additive (64, 128, 192, 256)
// Lists may mix both ("128,512:2048:x2"). At most 4096 values per axis, each
// once. Every error is a UsageError naming the axis (`what`: the flag as typed
// or "<file>:<line>: key 'x'") and the offending text.
#pragma once
#include <climits>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace fa {

// Every value must lie in [lo, hi].
std::vector<int> parse_int_axis(std::string_view text, std::string_view what, int lo = INT_MIN,
                                int hi = INT_MAX);
// "false,true", "true", "both" (= false,true); also 0/1.
std::vector<bool> parse_bool_axis(std::string_view text, std::string_view what);
// A comma-separated list of names, trimmed, empty entries rejected.
std::vector<std::string> split_list(std::string_view text, std::string_view what);
// "64x64,128x64" -> tiles (block_m x block_n only, each in 1..4096).
std::vector<Tile> parse_block_list(std::string_view text, std::string_view what);
// "4G", "512M", "1000000" -> bytes (positive, at most 2^61).
int64_t parse_bytes(std::string_view text, std::string_view what);

}  // namespace fa
