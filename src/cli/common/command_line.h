// The command line as typed, recorded once by main for run metadata.
#pragma once
#include <string>

namespace fa::cli {

void set_command_line(int argc, char** argv);
const std::string& command_line();

}  // namespace fa::cli
