// Files from the user are parsed without trusting them: JSON nesting is bounded
// before nlohmann recurses (a 100 000-deep file is exit 2, not a stack
// overflow), every nlohmann exception (1e400, a type error in a check suite) is
// exit 2 naming the file and key, and a .npy header is checked against the
// file's length before anything is allocated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "check/npy.h"
#include "check/user_inputs.h"
#include "core/errors.h"
#include "process_util.h"
#include "test_util.h"
#include "report/json_limits.h"

namespace fa {
namespace {

namespace fs = std::filesystem;

std::string write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return (dir / name).string();
}

std::string deep(int n) { return std::string(size_t(n), '[') + "1" + std::string(size_t(n), ']'); }

TEST(UntrustedFiles, JsonDepthIsBoundedBeforeParsing) {
  EXPECT_NO_THROW(parse_json_bounded(deep(kMaxJsonDepth), "x.json"));
  EXPECT_THROW(parse_json_bounded(deep(kMaxJsonDepth + 1), "x.json"), UsageError);
  EXPECT_THROW(parse_json_bounded(deep(100000), "x.json"), UsageError);
  // Brackets inside strings are text, not nesting.
  EXPECT_NO_THROW(parse_json_bounded("{\"a\": \"" + std::string(1000, '[') + "\"}", "x.json"));
}

TEST(UntrustedFiles, DeepFilesAreUsageErrorsNotCrashes) {
  auto dir = test::temp_dir("deep_json");
  // Copying a deep value recursed once per level: these crashed with SIGSEGV.
  const std::string d = write(dir, "deep.json", deep(100000));
  const std::string deep_value = write(dir, "deep_value.json", "{\"seqlen\": " + deep(1000000) + "}");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  const std::string deep_meta =
      write(dir, "deep_meta.json", "{\"schema_version\": 1, \"metadata\": " + objects + ", \"results\": []}");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"sweep", "--backend", "cpu", "--config", d},
           {"sweep", "--backend", "cpu", "--config", deep_value},
           {"sweep", "--resume", d},
           {"sweep", "--resume", deep_meta},
           {"compare", d, deep_meta}}) {
    test::ProcResult r = test::run_fa_bench(args, dir);
    EXPECT_EQ(r.code, 2) << args[1] << " " << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find("nested deeper than"), std::string::npos) << r.err;
  }
  test::ProcResult c = test::wait_for(test::spawn(FA_CHECK_EXE, {"--backend", "cpu", "--config", d}, dir), dir);
  EXPECT_EQ(c.code, 2) << c.err;
}

TEST(UntrustedFiles, NlohmannExceptionsNameTheFileAndKey) {
  auto dir = test::temp_dir("json_exceptions");
  const std::string overflow = write(dir, "c.json", "{\n  \"seqlen\": 64,\n  \"max_seconds\": 1e400\n}\n");
  test::ProcResult r = test::run_fa_bench({"sweep", "--backend", "cpu", "--config", overflow}, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(overflow + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("max_seconds"), std::string::npos) << r.err;
  for (const char* suite : {R"({"cases": [{"case": "b1 h1/1 q16 k16 d16 fp32", "quick": "yes"}]})",
                            R"({"cases": [{"case": "b1 h1/1 q16 k16 d16 fp32", "backend": 5}]})",
                            R"({"cases": [{"case": "b1 h1/1 q16 k16 d16 fp32", "why": 1e400}]})"}) {
    const std::string path = write(dir, "s.json", suite);
    test::ProcResult s = test::wait_for(test::spawn(FA_CHECK_EXE, {"--backend", "cpu", "--config", path}, dir), dir);
    EXPECT_EQ(s.code, 2) << suite << ": " << s.err;
    EXPECT_NE(s.err.find(path), std::string::npos) << s.err;
  }
}

using test::npy_v1;

TEST(UntrustedFiles, NpyHeadersAreCheckedBeforeAllocating) {
  auto dir = test::temp_dir("npy_header");
  // 4 TiB claimed, 1 KiB held: an error naming the sizes, not an allocation.
  const std::string huge = write(
      dir, "huge.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 1024, 1024), }",
                              std::string(1024, '\0')));
  try {
    load_npy(huge);
    ADD_FAILURE() << "a 4 TiB header on a 1 KiB file was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("more data than the file holds"), std::string::npos) << e.what();
  }
  const std::string letters = write(
      dir, "letters.npy",
      npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 64abc, 2, 32), }", std::string(4 * 4096, '\0')));
  EXPECT_THROW(load_npy(letters), UsageError);
  const std::string extra_key = write(
      dir, "extra.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1, }", std::string(16, '\0')));
  EXPECT_THROW(load_npy(extra_key), UsageError);
}

TEST(UntrustedFiles, NonFiniteUserInputsAreBadInput) {
  auto dir = test::temp_dir("npy_nonfinite");
  fs::create_directories(dir / "in");
  std::vector<float> q(16 * 16, 0.5f), kv(16 * 16, 0.5f);
  q[37] = std::numeric_limits<float>::quiet_NaN();
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 16, 1, 16), }";
  auto bytes = [](const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); };
  write(dir / "in", "q.npy", npy_v1(dict, bytes(q)));
  write(dir / "in", "k.npy", npy_v1(dict, bytes(kv)));
  write(dir / "in", "v.npy", npy_v1(dict, bytes(kv)));
  try {
    load_user_inputs((dir / "in").string());
    ADD_FAILURE() << "a NaN in q.npy was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("q.npy: element 37 (index [0, 2, 0, 5])"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fa
