#include "cli/common/command_line.h"

namespace fa::cli {

namespace {
std::string g_command_line;

// Single-quote an argument when the shell would split or expand it, so the
// recorded line can be pasted back.
std::string shell_quote(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-+=./:,@%") == std::string::npos)
    return a;
  std::string out = "'";
  for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) g_command_line += (i ? " " : "") + shell_quote(argv[i]);
}

const std::string& command_line() { return g_command_line; }

}  // namespace fa::cli
