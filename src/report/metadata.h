// Run metadata: everything a reader needs to trust (or distrust) the numbers:
// the tool and commit, the command, the host and device, library versions,
// the resolved config, seed, timing method.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/executor.h"

namespace fa {

struct MetadataInputs {
  std::string command_line;
  nlohmann::json config;  // the fully resolved config (SweepConfig::to_json)
  uint64_t seed = 0;
  DeviceInfo device;
  std::string backend;
  std::string timing_method;
  bool flush_l2 = false;
  double matmul_ceiling_tflops = 0;
  double copy_bandwidth_gbps = 0;  // 0: not measured (null in JSON)
  // A sweep's plan (sweep/shard.h): its hash and rows, the whole plan's even in
  // a shard, and the shard ("K/N", "" for the whole plan). "" hash: no plan (fa-check).
  std::string plan_hash;
  size_t plan_rows = 0;
  std::string shard;
  // --devices: every worker's device, in the order given ({name, details} as
  // `device`, which is the first of them); empty: no `devices` key.
  std::vector<DeviceInfo> devices;
};

std::string utc_now_iso8601();
std::string host_name();
std::string cpu_model_name();
nlohmann::json library_versions();
nlohmann::json build_metadata(const MetadataInputs&);

}  // namespace fa
