// The fa3 kernels, as compiled into libfa_kernels.a, run on the Hopper tensor-core
// path (HGMMA, or QGMMA for the e4m3 forward, in the SASS of every forward and
// backward main kernel, issued as a pipeline rather than one wait per wgmma) and keep
// everything in registers (no stack frame, no local memory, no LDL/STL, in those
// and in the backward's pre- and post-pass). Needs no GPU: it reads the library
// with cuobjdump.
//
// cuobjdump is looked up on PATH, in /usr/local/cuda/bin, and in the PyPI
// packages nvidia-cuda-cuobjdump + nvidia-cuda-nvdisasm (--dump-sass needs
// nvdisasm beside it):  python3 -m pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
// Skips (with the reason) when the build has no CUDA, no fa3 instantiation, or
// no cuobjdump.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/gpu_entry.h"

namespace {

namespace fs = std::filesystem;

// Runs a shell command, returns its stdout (empty on failure to start).
std::string run_capture(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = pclose(f);
  if (status) *status = st;
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// The directory holding a usable cuobjdump, or "" when none is found.
std::string find_cuobjdump_dir() {
  const std::string on_path = trim(run_capture("command -v cuobjdump 2>/dev/null"));
  if (!on_path.empty()) return fs::path(on_path).parent_path().string();
  if (fs::exists("/usr/local/cuda/bin/cuobjdump")) return "/usr/local/cuda/bin";
  const std::string purelib =
      trim(run_capture("python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])' 2>/dev/null"));
  if (!purelib.empty())
    for (const char* cu : {"cu13", "cu12"}) {
      const fs::path p = fs::path(purelib) / "nvidia" / cu / "bin";
      if (fs::exists(p / "cuobjdump")) return p.string();
    }
  return "";
}

// libfa_kernels.a sits in the build directory, which is where fa-bench goes too.
fs::path gpu_library() { return fs::path(FA_BENCH_EXE).parent_path() / "libfa_kernels.a"; }

struct KernelSass {
  int hgmma = 0, local_ops = 0;  // hgmma counts QGMMA too
  // The most wgmmas issued between two waits (WARPGROUP.DEPBAR): a pipelined Q K^T
  // alone issues head_dim / 16 (e4m3: / 32) of them back to back. Where ptxas
  // serializes the pipeline ("wgmma.mma_async instructions are serialized", C7511:
  // an accumulator it cannot keep in place) it waits after every one: 1.
  int longest_gmma_run = 0, gmma_run = 0;
};

// SASS per sm_90a function: counts of HGMMA and of local-memory loads/stores.
// Other architectures (FA_BENCH_EXTRA_ARCHS) hold fa3's empty-bodied stand-ins
// and are left out.
std::map<std::string, KernelSass> parse_sass(const std::string& sass) {
  std::map<std::string, KernelSass> out;
  KernelSass* cur = nullptr;
  bool sm90a = false;
  size_t pos = 0;
  while (pos < sass.size()) {
    size_t eol = sass.find('\n', pos);
    if (eol == std::string::npos) eol = sass.size();
    const std::string_view line(sass.data() + pos, eol - pos);
    pos = eol + 1;
    if (line.find("code for sm_") != std::string_view::npos) {
      sm90a = line.find("code for sm_90a") != std::string_view::npos;
      cur = nullptr;
      continue;
    }
    const size_t f = line.find("Function : ");
    if (f != std::string_view::npos) {
      cur = sm90a ? &out[std::string(line.substr(f + 11))] : nullptr;
      continue;
    }
    if (!cur) continue;
    // HGMMA: 16-bit operands; QGMMA: e4m3 ones (the FP8 forward).
    if (line.find("HGMMA") != std::string_view::npos || line.find("QGMMA") != std::string_view::npos) {
      ++cur->hgmma;
      cur->longest_gmma_run = std::max(cur->longest_gmma_run, ++cur->gmma_run);
    } else if (line.find("WARPGROUP.DEPBAR") != std::string_view::npos) {
      cur->gmma_run = 0;
    }
    if (line.find(" LDL") != std::string_view::npos || line.find(" STL") != std::string_view::npos)
      ++cur->local_ops;
  }
  return out;
}

// The main kernel of each pass (one per instantiation), and every fa3 kernel.
// The 16-bit forward's and the e4m3 forward's (fa3_fp8_fwd_kernel) count as
// forwards; the e4m3 forward's V^T pre-pass (transpose_v_kernel) is an fa3
// kernel too, held to the same no-local-memory rule.
const char* main_kernel_of(const std::string& pass) {
  return pass == "fwd" ? "fa3_fwd_kernel or fa3_fp8_fwd_kernel" : "fa3_bwd_kernel";
}
bool is_main_kernel(const std::string& mangled, const std::string& pass) {
  if (pass == "fwd")
    return mangled.find("fa3_fwd_kernel") != std::string::npos || mangled.find("fa3_fp8_fwd_kernel") != std::string::npos;
  return mangled.find("fa3_bwd_kernel") != std::string::npos;
}
bool is_fa3_kernel(const std::string& mangled) {
  return mangled.find("fa3_fwd_kernel") != std::string::npos || mangled.find("fa3_bwd_") != std::string::npos ||
         mangled.find("fa3_fp8_fwd_kernel") != std::string::npos ||
         mangled.find("transpose_v_kernel") != std::string::npos;
}
const std::vector<std::string> kPasses = {"fwd", "bwd"};

class Fa3Sass : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef FA_BENCH_HAVE_CUDA
    GTEST_SKIP() << "built without CUDA (FA_BENCH_CUDA=OFF)";
#else
    int fa3 = 0;
    for (const auto& e : fa::gpu_kernel_entries())
      if (std::string(e.family) == "fa3") {
        ++fa3;
        ++expected_[e.pass];
      }
    if (fa3 == 0) GTEST_SKIP() << "no fa3 instantiation in this build (FA_BENCH_FAMILIES)";
    lib_ = gpu_library();
    ASSERT_TRUE(fs::exists(lib_)) << "fa3 entries are linked but " << lib_ << " is missing";
    dir_ = find_cuobjdump_dir();
    if (dir_.empty())
      GTEST_SKIP() << "no cuobjdump (PATH, /usr/local/cuda/bin, or: python3 -m pip install "
                      "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)";
#endif
  }
  std::string cuobjdump(const std::string& args) {
    // nvdisasm (needed by --dump-sass) is looked up on PATH: put cuobjdump's directory first.
    int status = 0;
    std::string out = run_capture("PATH='" + dir_ + "':\"$PATH\" cuobjdump " + args + " '" + lib_.string() +
                                      "' 2>&1",
                                  &status);
    EXPECT_EQ(status, 0) << "cuobjdump " << args << " failed:\n" << out.substr(0, 2000);
    return out;
  }
  std::map<std::string, int> expected_;  // fa3 entries per pass
  fs::path lib_;
  std::string dir_;
};

// One SASS dump (about a minute on two cores) for all three properties. A
// serialized wgmma pipeline still computes the right values (fa-check passes) but
// waits after every GEMM step; kernel changes that compiled that way were dropped
// before timing (docs/PERF_NOTES.md, fa3-short-half-diagonal-block).
TEST_F(Fa3Sass, EveryKernelUsesPipelinedHgmmaAndNoLocalMemory) {
  const auto kernels = parse_sass(cuobjdump("--dump-sass"));
  std::map<std::string, int> found;
  for (const auto& [name, k] : kernels) {
    if (!is_fa3_kernel(name)) continue;
    EXPECT_EQ(k.local_ops, 0) << name << ": " << k.local_ops << " LDL/STL (register spill or local array)";
    for (const std::string& pass : kPasses) {
      if (!is_main_kernel(name, pass)) continue;
      ++found[pass];
      EXPECT_GT(k.hgmma, 0) << name << ": no HGMMA/QGMMA (not on the wgmma path; built without sm_90a?)";
      EXPECT_GE(k.longest_gmma_run, 2) << name << ": every wgmma is followed by a wait (the longest run between "
                                       << "waits is " << k.longest_gmma_run
                                       << "): ptxas serialized the pipeline (C7511 with -Xptxas -v)";
    }
  }
  // At least one sm_90a main kernel per instantiation, counted per pass.
  for (const std::string& pass : kPasses)
    EXPECT_GE(found[pass], expected_[pass])
        << "fewer " << main_kernel_of(pass) << " in the SASS than fa3 " << pass << " entries in the registry";
}

// The detector itself, on SASS written the two ways (no library needed).
TEST(Fa3SassParse, TellsASerializedPipelineFromAPipelinedOne) {
  const std::string head = "\t\tcode for sm_90a\n\t\tFunction : k\n";
  const std::string gmma = "        /*0100*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR12], R24 ;\n";
  const std::string wait = "        /*0110*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n";
  const std::string other = "        /*0120*/                   UIADD3 UR12, UR12, 0x2, URZ ;\n";
  std::string pipelined = head, serialized = head;
  for (int i = 0; i < 4; ++i) {
    pipelined += gmma + other;
    serialized += gmma + wait + other;
  }
  pipelined += wait;
  EXPECT_EQ(parse_sass(pipelined).at("k").longest_gmma_run, 4);
  EXPECT_EQ(parse_sass(serialized).at("k").longest_gmma_run, 1);
  EXPECT_EQ(parse_sass(serialized).at("k").hgmma, 4);
}

TEST_F(Fa3Sass, NoStackOrLocalBytes) {
  const std::string usage = cuobjdump("-res-usage");
  std::map<std::string, int> found;
  std::string current;
  bool sm90a = false;
  size_t pos = 0;
  while (pos < usage.size()) {
    size_t eol = usage.find('\n', pos);
    if (eol == std::string::npos) eol = usage.size();
    const std::string line = usage.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.find("arch = sm_") != std::string::npos) {
      sm90a = line.find("arch = sm_90a") != std::string::npos;
      continue;
    }
    const size_t f = line.find("Function ");
    if (f != std::string::npos) {
      current = line.substr(f + 9);
      continue;
    }
    if (!sm90a || !is_fa3_kernel(current) || line.find("REG:") == std::string::npos) continue;
    for (const std::string& pass : kPasses) found[pass] += is_main_kernel(current, pass);
    EXPECT_NE(line.find("STACK:0 "), std::string::npos) << current << ": " << line;
    EXPECT_NE(line.find("LOCAL:0 "), std::string::npos) << current << ": " << line;
    current.clear();
  }
  for (const std::string& pass : kPasses)
    EXPECT_GE(found[pass], expected_[pass]) << "no resource usage found for the fa3 " << pass << " kernels";
}

}  // namespace
