#include "report/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa {

const char* file_kind(unsigned mode) {
  const mode_t m = mode_t(mode);
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

int64_t check_input_file(const std::string& path, const std::string& what) {
  if (path.empty()) throw UsageError(fmt::format("{}: empty file name", what));
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw UsageError(fmt::format("{} '{}' cannot be read: {}", what, path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw UsageError(fmt::format("{} '{}' is {}; expected a regular file", what, path, file_kind(st.st_mode)));
  return int64_t(st.st_size);
}

std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes) {
  const int64_t size = check_input_file(path, what);
  if (size > max_bytes)
    throw UsageError(fmt::format("{} '{}' has {} bytes; expected at most {}", what, path, size, max_bytes));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("{} '{}' cannot be opened: {}", what, path, std::strerror(errno)));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace fa
