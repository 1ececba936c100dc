// fa-bench: benchmark and validate attention kernels. main only parses, picks
// the subcommand and maps its outcome to an exit code (cli/common/exit_codes.h).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common/command_line.h"
#include "cli/common/exit_codes.h"
#include "cli/fa_bench/subcommand.h"
#include "build_info.h"

namespace {

// One line per subcommand.
const fa::cli::SubcommandSetup kSubcommands[] = {
    fa::cli::setup_sweep,
    fa::cli::setup_list,
    fa::cli::setup_compare,
    fa::cli::setup_report,
    fa::cli::setup_merge,
};

}  // namespace

int main(int argc, char** argv) {
  fa::cli::set_command_line(argc, argv);
  CLI::App app{"fa-bench: benchmark and validate FlashAttention kernels", "fa-bench"};
  app.set_version_flag("--version", std::string(FA_BENCH_VERSION) + " (" + FA_BENCH_GIT_COMMIT + ")");
  app.require_subcommand(1);
  app.footer("Run 'fa-bench <subcommand> --help' for its flags. Exit codes: 0 ok, 1 a kernel "
             "failed or errored (compare: a regression; report: plot.py failed), 2 bad input (nothing run, "
             "created or changed), 124 --timeout passed, 130 interrupted.");
  std::vector<fa::cli::Subcommand> subs;
  for (auto setup : kSubcommands) subs.push_back(setup(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version arrive as "errors" with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e);
    fa::cli::print_parse_error("fa-bench", e.what());
    return fa::cli::kExitUsage;
  }
  for (auto& s : subs)
    if (s.app->parsed()) return fa::cli::run_guarded("fa-bench", s.run);
  return fa::cli::kExitUsage;
}
