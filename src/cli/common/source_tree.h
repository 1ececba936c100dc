// Files of the source tree a program reads at run time (fa-check's suite,
// fa-bench report's plot script), found the same way for every program.
#pragma once
#include <string>

namespace fa::cli {

// `relative` (e.g. "configs/check.json") in the working directory, else beside
// the build folder the running binary is in (builds live in a folder of the
// source tree: build/, build-*/); "" when neither exists.
std::string find_source_tree_file(const std::string& relative);

}  // namespace fa::cli
