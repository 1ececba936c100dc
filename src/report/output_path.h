// Where results go. Every output path is checked before anything runs, together
// with the inputs, so a bad one is a usage error with nothing created or
// changed: '-' means standard output; a file must be creatable in an existing,
// writable folder and, if it exists, be a regular file (a link is followed: its
// target is what gets replaced, the link stays); no two outputs, and no output
// and input, may be the same file (compared after resolving '.', '..' and links,
// and by inode).
#pragma once
#include <string>
#include <vector>

namespace fa {

struct PathUse {
  std::string flag;  // "--json", "--config", "compare: baseline"
  std::string path;
};

// UsageError "<flag>: cannot write '<path>': <why>" or naming the two flags
// that collide. At most one output may be '-'.
void check_output_paths(const std::vector<PathUse>& outputs, const std::vector<PathUse>& inputs);
// A folder files will be created in (--save-outputs): an existing writable
// folder, or one whose nearest existing ancestor is a writable folder (it is
// created on first use). Nothing is created here.
void check_output_folder(const PathUse& folder, const std::vector<PathUse>& others);

// Writes `content` to `path`: '-' prints it on standard output; a file is
// replaced atomically (write_file_atomic on the link's target).
void write_output(const std::string& path, const std::string& content);

}  // namespace fa
