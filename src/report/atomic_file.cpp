#include "report/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace fa {

namespace {
std::string dir_of(const std::string& path) {
  std::filesystem::path p(path);
  auto d = p.parent_path();
  return d.empty() ? std::string(".") : d.string();
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  // fmt::format rather than "." + std::string: GCC 12 flags the latter with a -Wrestrict
  // false positive.
  std::string tmpl = (std::filesystem::path(dir_of(path)) /
                      fmt::format(".{}.tmpXXXXXX", std::filesystem::path(path).filename().string()))
                         .string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0)
    throw std::runtime_error(fmt::format("cannot create a temporary file next to '{}': {}", path,
                                         std::strerror(errno)));
  auto fail = [&](const char* what) {
    int err = errno;
    close(fd);
    unlink(tmpl.c_str());
    throw std::runtime_error(fmt::format("{} '{}' (for '{}'): {}", what, tmpl, path, std::strerror(err)));
  };
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write to");
    }
    p += n;
    left -= size_t(n);
  }
  // mkstemp creates 0600; results are meant to be shared like any output file.
  fchmod(fd, 0644);
  if (fsync(fd) != 0) fail("fsync of");
  if (close(fd) != 0) {
    unlink(tmpl.c_str());
    throw std::runtime_error(fmt::format("close of '{}' failed: {}", tmpl, std::strerror(errno)));
  }
  if (rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmpl.c_str());
    throw std::runtime_error(fmt::format("rename '{}' -> '{}' failed: {}", tmpl, path, std::strerror(err)));
  }
}

std::string unwritable_reason(const std::string& path) {
  if (path.empty()) return "empty file name";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return fmt::format("'{}' is a directory", path);
  std::string dir = dir_of(path);
  if (!std::filesystem::is_directory(dir, ec))
    return fmt::format("directory '{}' of '{}' does not exist", dir, path);
  if (access(dir.c_str(), W_OK) != 0)
    return fmt::format("directory '{}' of '{}' is not writable", dir, path);
  return "";
}

}  // namespace fa
