#pragma once
#include <string>

namespace fa::cli {

struct ListOptions {
  std::string backend;  // "" = do not check whether variants run here
  std::string kernels;  // "" = all
};

}  // namespace fa::cli
