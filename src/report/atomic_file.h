// Replacing a file so a reader (or a crash) never sees half of it.
#pragma once
#include <string>

namespace fa {

// Writes `content` to a temporary file in the same directory, fsyncs it and
// renames it over `path` (rename is atomic within one file system). A link is
// followed and its target replaced (the link stays); a target that exists and is
// not a regular file (a device, a FIFO) is never replaced: std::runtime_error.
// Throws std::runtime_error with the path and errno text on failure.
void write_file_atomic(const std::string& path, const std::string& content);

// The file a path names once links are followed (a dangling link: its target).
std::string resolve_links(const std::string& path);

}  // namespace fa
