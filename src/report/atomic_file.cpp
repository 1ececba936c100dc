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

void write_file_atomic(const std::string& link_or_path, const std::string& content) {
  struct stat st {};
  if (stat(link_or_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw std::runtime_error(fmt::format("'{}' is not a regular file; it is never replaced", link_or_path));
  const std::string path = resolve_links(link_or_path);
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

std::string resolve_links(const std::string& path) {
  std::filesystem::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(p, ec)) return p.string();
    std::filesystem::path target = std::filesystem::read_symlink(p, ec);
    if (ec) return p.string();
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p.string();  // a loop: the write that follows reports it
}

}  // namespace fa
