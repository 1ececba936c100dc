// Output files: replaced atomically, but never by replacing a link (its target
// is written), a device or a FIFO; '-' is standard output; a FIFO or folder
// given as an input is refused at once; names that are not UTF-8 work.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "process_util.h"
#include "report/atomic_file.h"
#include "report/result_json.h"

namespace fa {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTiny = {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16",
                                        "--seqlen", "16", "--head-dim", "16", "--heads", "1", "--dtype", "fp32",
                                        "--warmup", "0", "--min-samples", "1", "--max-samples", "2",
                                        "--max-seconds", "0.01", "--seed", "1"};

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(OutputFiles, ALinkIsWrittenThroughAndStays) {
  auto dir = test::temp_dir("out_link");
  std::ofstream(dir / "target.json") << "old";
  fs::create_symlink("target.json", dir / "link.json");
  write_file_atomic((dir / "link.json").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(test::slurp((dir / "target.json").string()), "new");
}

TEST(OutputFiles, AFifoIsNeverReplaced) {
  auto dir = test::temp_dir("out_fifo");
  ASSERT_EQ(mkfifo((dir / "pipe").c_str(), 0644), 0);
  EXPECT_THROW(write_file_atomic((dir / "pipe").string(), "x"), std::runtime_error);
  EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
  // Through the sweep: a usage error before anything runs, the FIFO untouched.
  test::ProcResult r = test::run_fa_bench(tiny({"--json", (dir / "pipe").string()}), dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("a FIFO"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
}

TEST(OutputFiles, DashIsStandardOutput) {
  auto dir = test::temp_dir("out_dash");
  test::ProcResult r = test::run_fa_bench(tiny({"--json", "-"}), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "-"));
  const auto doc = nlohmann::json::parse(r.out);  // stdout holds the JSON document alone
  EXPECT_EQ(doc["metadata"]["run_status"], "complete");
  EXPECT_EQ(doc["results"].size(), 1u);
  test::ProcResult csv = test::run_fa_bench(tiny({"--csv", "-"}), dir);
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("kernel,family,backend,", 0), 0u) << csv.out;
  EXPECT_EQ(test::run_fa_bench(tiny({"--json", "-", "--csv", "-"}), dir).code, 2);
}

TEST(OutputFiles, AFifoOrFolderAsInputIsRefusedAtOnce) {
  auto dir = test::temp_dir("in_fifo");
  ASSERT_EQ(mkfifo((dir / "c.json").c_str(), 0644), 0);
  fs::create_directories(dir / "d.json");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"sweep", "--backend", "cpu", "--config", (dir / "c.json").string()},
           {"sweep", "--backend", "cpu", "--resume", (dir / "c.json").string()},
           {"sweep", "--backend", "cpu", "--config", (dir / "d.json").string()},
           {"compare", (dir / "c.json").string(), (dir / "c.json").string()}}) {
    test::ProcResult r = test::wait_at_most(test::spawn(FA_BENCH_EXE, args, dir), dir, 10);
    EXPECT_EQ(r.code, 2) << args[args.size() - 1] << " (-1: still blocked after 10 s): " << r.err;
  }
}

TEST(OutputFiles, NamesThatAreNotUtf8Work) {
  auto dir = test::temp_dir("out_bytes");
  const std::string json = (dir / "r\xff\xfe.json").string();
  test::ProcResult r = test::run_fa_bench(tiny({"--json", json}), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json meta;
  EXPECT_EQ(read_results_json(json, &meta).size(), 1u);
  EXPECT_EQ(meta["run_status"], "complete");
}

}  // namespace
}  // namespace fa
