// Small functions shared by the test files: the message of an expected UsageError,
// and the bytes of a version-1 .npy file with any header dict.
#pragma once
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace fa::test {

// Runs f and returns the UsageError's message; a failure when none is thrown.
template <typename F>
std::string usage_message(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

// "\x93NUMPY" 1.0 with `header_dict` padded to numpy's 64-byte alignment, then `data`.
inline std::string npy_v1(const std::string& header_dict, const std::string& data) {
  std::string h = header_dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(h.size() & 0xFF);
  out += char(h.size() >> 8);
  return out + h + data;
}

}  // namespace fa::test
