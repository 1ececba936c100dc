// Reading a file the user names as an input (config, suite, results, .npy): it
// must be a regular file, checked before it is opened, so a FIFO is refused at
// once instead of blocking the open, and a folder is named as one.
#pragma once
#include <cstdint>
#include <string>

namespace fa {

// "a directory", "a FIFO", "a character device", ... for a stat mode that is
// not a regular file (messages about inputs and outputs).
const char* file_kind(unsigned mode);

// UsageError "<what> '<path>' ..." when the path is empty, missing, a folder,
// or not a regular file (FIFO, device, socket; links are followed). Returns its size.
int64_t check_input_file(const std::string& path, const std::string& what);
// check_input_file, then the whole contents; UsageError past max_bytes.
std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes);

}  // namespace fa
