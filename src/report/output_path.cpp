#include "report/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/errors.h"
#include "report/atomic_file.h"
#include "report/input_file.h"

namespace fa {

namespace fs = std::filesystem;

namespace {

struct Identity {
  std::string canonical;  // absolute, '.', '..' and links resolved
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

Identity identify(const std::string& path) {
  Identity id;
  std::error_code ec;
  const fs::path resolved = resolve_links(path);
  fs::path canon = fs::weakly_canonical(fs::absolute(resolved, ec), ec);
  id.canonical = (ec ? fs::absolute(resolved, ec) : canon).lexically_normal().string();
  struct stat st {};
  if (stat(resolved.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  return id;
}

bool same_file(const Identity& a, const Identity& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.canonical == b.canonical;
}

// "" when a file can be written at `path`, else why not.
std::string unwritable_file(const std::string& path) {
  // stat follows every link the kernel knows, /proc/self/fd/1 included.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return fmt::format("it is {}; expected a regular file, or - for standard output", file_kind(st.st_mode));
  const std::string target = resolve_links(path);
  fs::path dir = fs::path(target).parent_path();
  if (dir.empty()) dir = ".";
  struct stat ds {};
  if (stat(dir.c_str(), &ds) != 0) return fmt::format("directory '{}' does not exist", dir.string());
  if (!S_ISDIR(ds.st_mode)) return fmt::format("'{}' is not a directory", dir.string());
  if (access(dir.c_str(), W_OK) != 0) return fmt::format("directory '{}' is not writable", dir.string());
  return "";
}

void check_collisions(const std::vector<PathUse>& outputs, const std::vector<PathUse>& inputs) {
  std::vector<Identity> out_ids;
  for (const auto& o : outputs) out_ids.push_back(o.path == "-" ? Identity{} : identify(o.path));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path == "-") continue;
    for (size_t j = 0; j < i; ++j)
      if (outputs[j].path != "-" && same_file(out_ids[i], out_ids[j]))
        throw UsageError(fmt::format("{} '{}' and {} '{}' are the same file; expected a different file for each",
                                     outputs[j].flag, outputs[j].path, outputs[i].flag, outputs[i].path));
    for (const auto& in : inputs)
      if (!in.path.empty() && same_file(out_ids[i], identify(in.path)))
        throw UsageError(fmt::format("{} '{}' is the same file as {} '{}': writing it would destroy the input",
                                     outputs[i].flag, outputs[i].path, in.flag, in.path));
  }
}

}  // namespace

void check_output_paths(const std::vector<PathUse>& outputs, const std::vector<PathUse>& inputs) {
  const PathUse* on_stdout = nullptr;
  for (const auto& o : outputs) {
    if (o.path == "-") {
      if (on_stdout)
        throw UsageError(fmt::format("{} - and {} - both name standard output; expected at most one", on_stdout->flag,
                                     o.flag));
      on_stdout = &o;
      continue;
    }
    if (o.path.empty()) throw UsageError(fmt::format("{}: empty file name; expected a file name, or -", o.flag));
    if (std::string why = unwritable_file(o.path); !why.empty())
      throw UsageError(fmt::format("{}: cannot write '{}': {}", o.flag, o.path, why));
  }
  check_collisions(outputs, inputs);
}

void check_output_folder(const PathUse& folder, const std::vector<PathUse>& others) {
  if (folder.path.empty()) throw UsageError(fmt::format("{}: empty folder name", folder.flag));
  fs::path p = resolve_links(folder.path);
  struct stat st {};
  while (stat(p.c_str(), &st) != 0) {  // the nearest part that exists
    fs::path up = p.parent_path();
    if (up.empty()) up = ".";
    if (up == p) break;
    p = up;
  }
  if (!S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{}: cannot create files in '{}': '{}' is {}; expected a folder", folder.flag,
                                 folder.path, p.string(), file_kind(st.st_mode)));
  if (access(p.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("{}: cannot create files in '{}': '{}' is not writable", folder.flag,
                                 folder.path, p.string()));
  const Identity id = identify(folder.path);
  for (const auto& o : others)
    if (!o.path.empty() && o.path != "-" && same_file(id, identify(o.path)))
      throw UsageError(fmt::format("{} '{}' and {} '{}' are the same path; expected a folder of its own",
                                   folder.flag, folder.path, o.flag, o.path));
}

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::fwrite(content.data(), 1, content.size(), stdout);
    std::fflush(stdout);
    return;
  }
  write_file_atomic(path, content);
}

}  // namespace fa
