// The tests' scratch directories (process_util.h, temp_dir) are removed when the
// test program exits, and only by the process that made them.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "process_util.h"

namespace fa {
namespace {

// Runs `body` in a forked child that then exits normally (static destructors run);
// returns the child's exit status.
template <typename Body>
int in_child_that_exits(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    std::exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TempDirs, RemovedWhenTheProgramThatMadeThemExits) {
  const std::filesystem::path marker = test::temp_dir("temp_dirs_marker") / "child_dir.txt";
  ASSERT_EQ(in_child_that_exits([&] {
              unsetenv("FA_BENCH_KEEP_TEST_DIRS");
              const std::filesystem::path d = test::temp_dir("temp_dirs_child");
              std::ofstream(d / "file.txt") << "x";
              std::ofstream(marker) << d.string();
            }),
            0);
  const std::string made = test::slurp(marker.string());
  ASSERT_FALSE(made.empty());
  EXPECT_FALSE(std::filesystem::exists(made)) << made << " outlived the process that made it";
}

TEST(TempDirs, AChildThatExitsLeavesItsParentsDirectories) {
  const std::filesystem::path mine = test::temp_dir("temp_dirs_parent");
  std::ofstream(mine / "file.txt") << "x";
  ASSERT_EQ(in_child_that_exits([] { unsetenv("FA_BENCH_KEEP_TEST_DIRS"); }), 0);
  EXPECT_TRUE(std::filesystem::exists(mine / "file.txt"));
}

}  // namespace
}  // namespace fa
