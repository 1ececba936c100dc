#include "cli/common/source_tree.h"

#include <filesystem>
#include <system_error>

namespace fa::cli {

std::string find_source_tree_file(const std::string& relative) {
  namespace fs = std::filesystem;
  const fs::path here = relative;
  if (fs::exists(here)) return here.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path() / relative;
    if (fs::exists(beside)) return beside.string();
  }
  return "";
}

}  // namespace fa::cli
