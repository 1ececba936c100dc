// Bounded work: --cpu-mem-limit bounds the whole point (inputs, reference,
// outputs) before anything is allocated; Ctrl-C is honoured within a second
// inside the reference and the timing loop, the last row included; --timeout
// stops the sweep with every finished row kept.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "process_util.h"
#include "report/result_json.h"

namespace fa {
namespace {

using clock_type = std::chrono::steady_clock;

// AddressSanitizer's shadow memory inflates every RSS figure.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

bool exists(const std::string& p) { return std::filesystem::exists(p); }

// At seqlen 32768 the inputs alone are 96 MiB (float32 Q, K, V of 32768 x 4 heads
// x 64): over a 64 MiB limit.
test::ProcResult sweep_at(const std::filesystem::path& dir, const std::string& seqlen, struct rusage* usage) {
  return test::wait_for(
      test::spawn(FA_BENCH_EXE,
                  {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "64x64", "--seqlen", seqlen,
                   "--head-dim", "64", "--heads", "4", "--dtype", "fp32", "--cpu-mem-limit", "64M",
                   "--max-seconds", "0.01", "--json", (dir / "r.json").string()},
                  dir),
      dir, usage);
}
test::ProcResult over_the_limit(const std::filesystem::path& dir, struct rusage* usage) {
  return sweep_at(dir, "32768", usage);
}

TEST(BoundedWork, MemoryLimitCoversInputsReferenceAndOutputs) {
  auto dir = test::temp_dir("mem_limit");
  struct rusage usage {};
  test::ProcResult r = over_the_limit(dir, &usage);
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = read_results_json((dir / "r.json").string(), nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::oom) << rows[0].reason;
  EXPECT_NE(rows[0].reason.find("--cpu-mem-limit"), std::string::npos) << rows[0].reason;
}

// The peak RSS of the refused point, above that of a tiny point run by the same
// binary (whose own start-up, CUDA libraries included, is not the point's).
TEST(BoundedWork, MemoryLimitBoundsPeakRss) {
  if (kAddressSanitizer) GTEST_SKIP() << "peak RSS is not measured under AddressSanitizer (its shadow memory)";
  auto dir = test::temp_dir("mem_limit_rss");
  struct rusage tiny {}, big {};
  ASSERT_EQ(sweep_at(dir, "64", &tiny).code, 0);
  ASSERT_EQ(over_the_limit(dir, &big).code, 0);
  EXPECT_LT(big.ru_maxrss - tiny.ru_maxrss, 64 * 1024) << "peak RSS in KiB beyond a tiny point's, under a 64 MiB limit";
}

// Starts a sweep, waits until its JSON file exists plus `settle`, sends SIGINT
// and returns the result with the seconds from the signal to the exit.
std::pair<test::ProcResult, double> interrupt_after(const std::vector<std::string>& args,
                                                    const std::filesystem::path& dir, const std::string& json,
                                                    double settle) {
  pid_t pid = test::spawn(FA_BENCH_EXE, args, dir);
  test::wait_until([&] { return exists(json); });
  std::this_thread::sleep_for(std::chrono::duration<double>(settle));
  const auto t0 = clock_type::now();
  kill(pid, SIGINT);
  test::ProcResult r = test::wait_at_most(pid, dir, 30);
  return {r, std::chrono::duration<double>(clock_type::now() - t0).count()};
}

TEST(BoundedWork, InterruptInsideTheReferenceIsHonouredWithinASecond) {
  auto dir = test::temp_dir("stop_reference");
  const std::string json = (dir / "r.json").string();
  // Every one of 8192 rows checked: the float64 reference alone takes many seconds here.
  auto [r, seconds] = interrupt_after({"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "64x64",
                                       "--seqlen", "8192", "--head-dim", "64", "--heads", "4", "--dtype", "fp32",
                                       "--max-check-rows", "8192", "--threads", "2", "--json", json},
                                      dir, json, 0.5);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_LT(seconds, 1.5);
  nlohmann::json meta;
  EXPECT_EQ(read_results_json(json, &meta).size(), 0u);
  EXPECT_EQ(meta["run_status"], "interrupted");
}

TEST(BoundedWork, InterruptDuringTheLastRowIsNotSwallowed) {
  auto dir = test::temp_dir("stop_last_row");
  const std::string json = (dir / "r.json").string();
  // One row whose timing loop would run 20 s.
  auto [r, seconds] = interrupt_after({"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16",
                                       "--seqlen", "64", "--head-dim", "16", "--heads", "1", "--dtype", "fp32",
                                       "--warmup", "0", "--min-samples", "1", "--target-noise", "0",
                                       "--max-samples", "10000000", "--max-seconds", "20", "--json", json},
                                      dir, json, 0.5);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_LT(seconds, 1.5);
  nlohmann::json meta;
  EXPECT_EQ(read_results_json(json, &meta).size(), 0u);  // the row in progress is abandoned
  EXPECT_EQ(meta["run_status"], "interrupted");
}

TEST(BoundedWork, TimeoutKeepsTheFinishedRowsAndSaysSo) {
  auto dir = test::temp_dir("timeout");
  const std::string json = (dir / "r.json").string();
  // 8 rows of 0.3 s each against a 1 s limit.
  test::ProcResult r = test::wait_at_most(
      test::spawn(FA_BENCH_EXE,
                  {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16", "--seqlen",
                   "16,32,48,64,80,96,112,128", "--head-dim", "16", "--heads", "1", "--dtype", "fp32", "--warmup",
                   "0", "--min-samples", "1", "--target-noise", "0", "--max-samples", "10000000", "--max-seconds",
                   "0.3", "--timeout", "1", "--json", json},
                  dir),
      dir, 30);
  EXPECT_EQ(r.code, 124) << r.err;
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
  nlohmann::json meta;
  const auto rows = read_results_json(json, &meta);
  EXPECT_EQ(meta["run_status"], "timeout");
  EXPECT_GE(rows.size(), 1u);
  EXPECT_LT(rows.size(), 8u);
}

TEST(BoundedWork, CooldownWaitsBeforeEachTimedRowAndIsRecorded) {
  auto dir = test::temp_dir("cooldown");
  const std::string json = (dir / "r.json").string();
  // Three rows of a few ms each, 0.4 s of cooldown before each: at least 1.2 s.
  const auto t0 = std::chrono::steady_clock::now();
  test::ProcResult r = test::run_fa_bench({"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16",
                                           "--seqlen", "16,32,48", "--head-dim", "16", "--heads", "1", "--dtype",
                                           "fp32", "--warmup", "0", "--min-samples", "1", "--max-seconds", "0.01",
                                           "--cooldown", "0.4", "--json", json},
                                          dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(seconds, 1.2);
  nlohmann::json meta;
  EXPECT_EQ(read_results_json(json, &meta).size(), 3u);
  EXPECT_EQ(meta["config"]["cooldown"], 0.4);
}

TEST(BoundedWork, InterruptEndsACooldown) {
  auto dir = test::temp_dir("stop_cooldown");
  const std::string json = (dir / "r.json").string();
  auto [r, seconds] = interrupt_after({"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16",
                                       "--seqlen", "64", "--head-dim", "16", "--heads", "1", "--dtype", "fp32",
                                       "--cooldown", "60", "--json", json},
                                      dir, json, 0.5);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_LT(seconds, 1.5);
}

TEST(BoundedWork, HelpSaysWhatMaxSecondsBounds) {
  auto dir = test::temp_dir("help_max_seconds");
  test::ProcResult r = test::run_fa_bench({"sweep", "--help"}, dir);
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("not the inputs, the reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--timeout"), std::string::npos);
}

}  // namespace
}  // namespace fa
