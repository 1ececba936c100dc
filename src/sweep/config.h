// A sweep's settings: a JSON config file whose keys are the flags' names in
// snake_case, overridden by command-line flags, resolved into typed axes and
// expanded into the list of points (the cartesian product of the axes).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/inputs.h"
#include "check/user_inputs.h"
#include "core/fp8_settings.h"
#include "core/types.h"
#include "measure/timing.h"
#include "sweep/values.h"

namespace fa {

// Every key a config file may hold (and, with '-' for '_', every sweep flag).
const std::vector<std::string>& config_keys();

// Unresolved settings and where each came from: a config file's JSON values
// (origin "configs/x.json:3", or "r.json: metadata.config") and the command
// line's flags (their text, and the flag as the user typed it). Each value is
// parsed once, by resolve_config, straight into its typed field; the checks are
// the same for a flag and a key, and an error names the flag or the file and key.
struct ConfigSource {
  struct FileValue {
    std::string key;
    nlohmann::json value;
    std::string origin;
  };
  struct FlagValue {
    std::string key;
    std::string text;
    std::string flag;  // "--max-seconds"
  };
  std::vector<FileValue> file;   // in file order
  std::vector<FlagValue> flags;  // in command-line order; a flag overrides the file's key
};

// Reads a config file. UsageError for a missing file, a FIFO or folder, JSON
// nested too deep, malformed JSON (with the line, column and the last key
// before the error), a number out of range, a top level that is not an object,
// or an unknown key (with its line).
ConfigSource load_config_file(const std::string& path);
// Settings already parsed (a results file's metadata.config); `origin` names them.
ConfigSource config_from_json(const nlohmann::json&, const std::string& origin);
// A command-line value for `key`; it replaces the file's value. Setting one of
// batch/total_tokens (or heads/hidden) drops the file's other one.
void apply_override(ConfigSource&, const std::string& key, const std::string& text,
                    const std::string& flag);

struct SweepConfig {
  std::vector<int> seqlen{1024}, seqlen_k;  // seqlen_k empty: equal to seqlen
  std::vector<int> head_dim{128};
  std::vector<int> batch{1}, total_tokens;  // exactly one of them is set
  std::vector<int> heads{8}, hidden;        // exactly one of them is set
  std::vector<int> heads_kv;             // empty: equal to heads
  bool block_auto = true;                // each family's default tile
  std::vector<Tile> block;               // when !block_auto
  std::vector<bool> causal{false};
  std::vector<DType> dtype{DType::bf16};
  // e4m3 points only (docs/MEASUREMENT.md, "FP8 inputs"): the descale groups of
  // Q, K, V, and whether Q and K are rotated by the seeded randomized Hadamard
  // transform before they are quantized. Set with no e4m3 dtype: a usage error.
  Fp8Scaling fp8_scaling = Fp8Scaling::tensor;
  bool fp8_hadamard = false;
  std::vector<Pass> pass{Pass::fwd};     // fwd: fwd variants; bwd, fwd+bwd: bwd variants
  std::string kernels;                   // "": every kernel of the back end in use
  Distribution distribution = Distribution::normal;
  std::optional<uint64_t> seed;          // nullopt: fresh
  std::string backend = "auto";          // auto | cpu | cuda
  std::string json, csv, md;             // output files ("" = none)
  int64_t max_check_rows = 2048;
  bool exact_check = false;              // compare every query row, whatever max_check_rows says
  TimingOptions timing;
  double timeout = 0;                    // seconds for the whole sweep; 0 = none
  double cooldown = 0;                   // seconds waited before each timed row; 0 = none
  int threads = 0;                       // cpu back end; 0 = all hardware threads
  int64_t cpu_mem_limit = 0;             // bytes; 0 = half the machine's RAM
  bool counters = false;                 // cuda: read DRAM bytes from hardware counters
  std::string description;
  // Run only this slice of the plan (sweep/shard.h); nullopt: the whole plan.
  std::optional<Shard> shard;
  // One worker per device, points dealt to whichever is free (sweep/runner.h's
  // run_sweep_on_devices); nullopt: device 0 alone, rows without a `device`.
  // Where a run happens, not what it measures: --resume may change it.
  std::optional<DeviceList> devices;
  // The user's tensors (folder with q.npy, k.npy, v.npy): they fix batch,
  // seqlen, seqlen_k, heads, heads_kv and head_dim, and replace the generated
  // inputs (rounded to each point's dtype). "" = generated inputs.
  std::string inputs;
  std::shared_ptr<const UserInputs> user_inputs;  // loaded from `inputs` by resolve_config
  // Folder to write every validated run's O and LSE to as .npy ("" = none).
  std::string save_outputs;
  // Where each key was set ("--seqlen", "c.json:3: key 'seqlen'"), for messages
  // about combinations of axes.
  std::map<std::string, std::string> origin;
  // Validate only, never time (fa-check): rows carry errors but no timing. Not
  // a config key: the sweep always times.
  bool validate_only = false;

  // Every setting by its key, fully resolved (seed included once chosen).
  nlohmann::json to_json() const;
  // The FP8 settings a point of `dtype` is made with: set for e4m3 alone.
  std::optional<Fp8Settings> fp8_settings(DType dtype) const;
};

// Typed, range-checked settings. UsageError naming the flag, or the key and its origin.
SweepConfig resolve_config(const ConfigSource&);
// The most points one sweep may have (a product of axes gone wrong is a typo).
constexpr size_t kMaxPoints = 65536;
// Points in a stable order (dtype, causal, head_dim, heads, heads_kv, batch,
// seqlen_k, seqlen innermost). The pass is not a point axis: every pass of a
// point shares its inputs and reference (sweep/plan.h). UsageError for a point
// that is not a valid problem (e.g. heads not divisible by heads_kv), naming
// the point, and for more than kMaxPoints points.
std::vector<AttnProblem> expand_points(const SweepConfig&);

}  // namespace fa
