// .npy round trips and clear errors on malformed files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "check/half.h"
#include "check/npy.h"
#include "core/errors.h"
#include "test_util.h"

namespace fa {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fa_test_npy_" + std::to_string(getpid()) + "_" + name)).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string v1_file(const std::string& header_dict, const std::string& data) {
  return test::npy_v1(header_dict, data);
}

TEST(Npy, RoundTripFloat32) {
  const std::string path = temp_path("f32.npy");
  const std::vector<float> data = {1.5f, -2.25f, 3e-8f, 65504.f, -0.f, 7.f};
  save_npy(path, {2, 3}, data);
  const NpyArray a = load_npy(path);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, data);
  std::ifstream f(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ((all.find('\n') + 1) % 64, 0u) << "header padded to 64 bytes";
  EXPECT_NE(all.find("'shape': (2, 3)"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Npy, RoundTripFloat16AndOneDim) {
  const std::string path = temp_path("f16.npy");
  const std::vector<float> data = {1.0f, 0.1f, -3.0f, 70000.f};
  save_npy(path, {4}, data, /*as_f16=*/true);
  const NpyArray a = load_npy(path);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(a.data.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.data[i], round_f16(data[i]));
  EXPECT_TRUE(std::isinf(a.data[3]));
  std::remove(path.c_str());
}

TEST(Npy, ReadsVersion2HeadersAndScalars) {
  const std::string path = temp_path("v2.npy");
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
  while ((12 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string bytes("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) bytes += char((h.size() >> (8 * i)) & 0xFF);
  const float v = 42.5f;
  bytes += h + std::string(reinterpret_cast<const char*>(&v), 4);
  write_bytes(path, bytes);
  const NpyArray a = load_npy(path);
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, (std::vector<float>{42.5f}));
  std::remove(path.c_str());
}

TEST(Npy, MalformedFilesAreUsageErrorsNamingThePath) {
  const std::string path = temp_path("bad.npy");
  const std::string four_floats(16, '\0');
  const std::pair<std::string, std::string> cases[] = {
      {"not numpy at all", "magic"},
      {v1_file("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", std::string(32, '\0')), "<f8"},
      {v1_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four_floats), "Fortran"},
      {v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four_floats), "truncated"},
      {v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four_floats), "trailing"},
      {v1_file("{'descr': '<f4', 'fortran_order': False}", four_floats), "shape"},
  };
  for (const auto& [bytes, why] : cases) {
    write_bytes(path, bytes);
    try {
      load_npy(path);
      ADD_FAILURE() << "no error for a file that should fail with '" << why << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_npy(temp_path("does_not_exist.npy")), UsageError);
  EXPECT_THROW(save_npy(path, {3}, {1.f, 2.f}), UsageError);  // shape and data disagree
}

}  // namespace
}  // namespace fa
