// Replacing a file so a reader (or a crash) never sees half of it.
#pragma once
#include <string>

namespace fa {

// Writes `content` to a temporary file in the same directory, fsyncs it and
// renames it over `path` (rename is atomic within one file system).
// Throws std::runtime_error with the path and errno text on failure.
void write_file_atomic(const std::string& path, const std::string& content);

// Can `path` be created? Checks the directory exists and is writable, without
// creating anything, so a bad --json path is a usage error before the sweep runs.
std::string unwritable_reason(const std::string& path);  // "" = fine

}  // namespace fa
