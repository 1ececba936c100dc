// Strict text -> typed value parsers shared by every flag and config-file key (and by
// fa-check's and compare's flags): the whole text must be the value (no "3abc", no
// "1.5" for an integer, no "0x10"), the value must lie in its range (no wrap of
// 3000000000 into an int), and a real number must be finite. Every error is a
// UsageError of one shape: "<where>: '<text>' <what is wrong>; expected <what is accepted>",
// where `where` is the flag as the user typed it ("--max-seconds") or
// "<file>:<line>: key 'max_seconds'".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa {

int64_t parse_integer(std::string_view text, std::string_view where, int64_t lo, int64_t hi);
uint64_t parse_unsigned(std::string_view text, std::string_view where);
// lo_open: the range excludes lo ((0, hi] for a time budget).
double parse_real(std::string_view text, std::string_view where, double lo, double hi, bool lo_open);
bool parse_boolean(std::string_view text, std::string_view where);  // true/false/1/0
// A value that must not be empty (a file name, a selection).
std::string parse_nonempty(std::string_view text, std::string_view where, std::string_view what);

// "[lo, hi]" / "(lo, hi]" as the messages print a range.
std::string range_text(double lo, double hi, bool lo_open = false);

// One of `count` deterministic slices of a sweep's plan (--shard K/N): `index`
// is K, 1-based. Written "K/N" in the flag, the config key and the metadata.
struct Shard {
  int index = 1, count = 1;
  std::string str() const;
};
// A sweep split finer than its most points (config.h's kMaxPoints) has empty shards only.
constexpr int kMaxShards = 65536;
// "K/N" with 1 <= K <= N <= kMaxShards, each an integer in the flag syntax.
Shard parse_shard(std::string_view text, std::string_view where);

// The devices a sweep or check runs on, one worker each (--devices LIST|all):
// `all` is every device the back end sees, resolved once the back end is chosen
// (cli/common/devices.h); `indices` are the back end's device numbers, each once,
// in the order given.
struct DeviceList {
  bool all = false;
  std::vector<int> indices;
  std::string str() const;  // "all" or "0,1"
};
// More workers than this is a typo (no host carries so many GPUs).
constexpr int kMaxDevices = 64;
// "all", or a comma-separated list of integers in [0, kMaxDevices), each once.
DeviceList parse_devices(std::string_view text, std::string_view where);

}  // namespace fa
