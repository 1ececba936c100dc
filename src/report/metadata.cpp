#include "report/metadata.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>

#include <Eigen/Core>
#include <fmt/format.h>

#include "build_info.h"

namespace fa {

using nlohmann::json;

std::string utc_now_iso8601() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, int(ms));
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos && pos + 2 <= line.size()) return line.substr(pos + 2);
    }
  return "unknown";
}

json library_versions() {
  json j;
  j["fmt"] = fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
  j["nlohmann_json"] = fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                   NLOHMANN_JSON_VERSION_PATCH);
  j["eigen"] = fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  j["cxx_compiler"] = FA_BENCH_CXX_COMPILER;
  j["cxx_host_arch"] = FA_BENCH_HOST_ARCH;  // -march of the reference and CPU kernels, "" the default
#ifdef FA_BENCH_HAVE_CUDA
  j["cuda_compiler"] = FA_BENCH_CUDA_COMPILER;
  j["cuda_gencode"] = FA_BENCH_CUDA_GENCODE;
#endif
  return j;
}

json build_metadata(const MetadataInputs& in) {
  json m;
  m["tool"] = "fa-bench";
  m["version"] = FA_BENCH_VERSION;
  m["git_commit"] = FA_BENCH_GIT_COMMIT;
  m["command_line"] = in.command_line;
  m["start_time"] = utc_now_iso8601();
  m["end_time"] = nullptr;
  m["run_status"] = "running";
  m["host_name"] = host_name();
  m["cpu_model"] = cpu_model_name();
  m["backend"] = in.backend;
  json dev;
  dev["name"] = in.device.name;
  dev["details"] = in.device.details;  // CUDA/driver/cuDNN versions come from here on cuda
  m["device"] = dev;
  if (!in.devices.empty()) {
    json all = json::array();
    for (const DeviceInfo& d : in.devices) all.push_back({{"name", d.name}, {"details", d.details}});
    m["devices"] = all;
  }
  m["libraries"] = library_versions();
  m["config"] = in.config;
  m["seed"] = in.seed;
  m["timing_method"] = in.timing_method;
  m["flush_l2"] = in.flush_l2;
  // null: not measured (the cpu back end has no matmul ceiling).
  m["matmul_ceiling_tflops"] = in.matmul_ceiling_tflops > 0 ? json(in.matmul_ceiling_tflops) : json(nullptr);
  // The roofline's memory roof, measured beside the compute one; null where not measured.
  m["copy_bandwidth_gbps"] = in.copy_bandwidth_gbps > 0 ? json(in.copy_bandwidth_gbps) : json(nullptr);
  if (!in.plan_hash.empty()) {
    m["plan_hash"] = in.plan_hash;
    m["plan_rows"] = in.plan_rows;
    m["shard"] = in.shard.empty() ? json(nullptr) : json(in.shard);
  }
  return m;
}

}  // namespace fa
