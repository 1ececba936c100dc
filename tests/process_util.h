// Running the real fa-bench binary from tests: exit code, stdout, stderr.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fa::test {

struct ProcResult {
  int code = -1;  // exit status, or 128 + signal
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The directories temp_dir made, each removed when the process that made it exits.
// A forked child inherits this list and runs the same destructors when it exits:
// the pid kept with each directory keeps the child from removing its parent's.
// FA_BENCH_KEEP_TEST_DIRS=1 keeps them all, to read a failure's files.
class TempDirs {
 public:
  static TempDirs& instance() {
    static TempDirs dirs;
    return dirs;
  }
  void add(const std::filesystem::path& d) { dirs_.push_back({d, getpid()}); }
  ~TempDirs() {
    if (std::getenv("FA_BENCH_KEEP_TEST_DIRS")) return;
    for (const auto& [dir, maker] : dirs_) {
      if (maker != getpid()) continue;
      std::error_code ec;  // best effort: a test may have removed it already
      std::filesystem::remove_all(dir, ec);
    }
  }

 private:
  TempDirs() = default;
  std::vector<std::pair<std::filesystem::path, pid_t>> dirs_;
};

// A fresh empty directory under the system temp dir, unique per test, removed at exit.
inline std::filesystem::path temp_dir(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() /
           ("fa_bench_" + tag + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  TempDirs::instance().add(d);
  return d;
}

// Starts `exe args...` with stdout/stderr into files in `dir`; returns the pid.
inline pid_t spawn(const std::string& exe, const std::vector<std::string>& args,
                   const std::filesystem::path& dir) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string out = (dir / "stdout.txt").string(), err = (dir / "stderr.txt").string();
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(127);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

inline ProcResult wait_for(pid_t pid, const std::filesystem::path& dir, struct rusage* usage = nullptr) {
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  if (usage) *usage = ru;
  ProcResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp((dir / "stdout.txt").string());
  r.err = slurp((dir / "stderr.txt").string());
  return r;
}

// Waits at most `seconds`; a process still running then is killed (SIGKILL) and
// reported with code -1, so a test of "answers at once" fails instead of hanging.
inline ProcResult wait_at_most(pid_t pid, const std::filesystem::path& dir, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ProcResult r;
      r.code = -1;
      r.err = slurp((dir / "stderr.txt").string());
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ProcResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp((dir / "stdout.txt").string());
  r.err = slurp((dir / "stderr.txt").string());
  return r;
}

// Polls `ready` every 20 ms until it holds or 20 s pass (then the caller's own
// assertions report what was missing).
template <typename Pred>
inline void wait_until(Pred ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

inline ProcResult run_fa_bench(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  return wait_for(spawn(FA_BENCH_EXE, args, dir), dir);
}

}  // namespace fa::test
