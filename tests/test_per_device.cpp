// PerDevice (kernels/common/per_device.h): one value per device, computed once,
// failures not kept, devices independent, and one computation per device when
// several threads ask at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/per_device.h"

namespace fa {
namespace {

TEST(PerDevice, ComputesOncePerDeviceAndKeepsDevicesApart) {
  PerDevice<int> cache;
  int calls = 0;
  auto sm_of = [&](int v) { return [&calls, v] { ++calls; return std::optional<int>(v); }; };
  EXPECT_EQ(cache.get(0, sm_of(90)), 90);
  EXPECT_EQ(cache.get(0, sm_of(80)), 90);  // cached: the second compute is not called
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.get(3, sm_of(80)), 80);
  EXPECT_EQ(cache.get(0, sm_of(70)), 90);
  EXPECT_EQ(cache.get(3, sm_of(70)), 80);
  EXPECT_EQ(calls, 2);
}

TEST(PerDevice, AFailureIsNotKept) {
  PerDevice<double> cache;
  EXPECT_FALSE(cache.get(1, [] { return std::optional<double>(); }).has_value());
  EXPECT_EQ(cache.get(1, [] { return std::optional<double>(2.5); }), 2.5);
  EXPECT_EQ(cache.get(1, [] { return std::optional<double>(); }), 2.5);
}

TEST(PerDevice, ThreadsOnOneDeviceComputeItOnce) {
  PerDevice<int> cache;
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  std::vector<int> got(16, 0);
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      got[i] = *cache.get(i % 2, [&, i] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
        return std::optional<int>(100 + i % 2);
      });
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 2);  // one per device
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], 100 + i % 2) << i;
}

}  // namespace
}  // namespace fa
