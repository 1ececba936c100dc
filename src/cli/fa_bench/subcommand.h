// A fa-bench subcommand: its setup function adds a CLI11 subcommand with its
// own options struct and returns what to run when the user picked it. main.cpp
// lists the setup functions; a new subcommand is a new file plus one line there.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace fa::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit code; may throw (mapped by run_guarded)
};
using SubcommandSetup = Subcommand (*)(CLI::App& parent);

Subcommand setup_sweep(CLI::App& parent);  // sweep_command.cpp
Subcommand setup_list(CLI::App& parent);   // list_command.cpp
Subcommand setup_compare(CLI::App& parent);  // compare_command.cpp
Subcommand setup_report(CLI::App& parent);   // report_command.cpp
Subcommand setup_merge(CLI::App& parent);    // merge_command.cpp

}  // namespace fa::cli
