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
#include "core/types.h"
#include "measure/timing.h"

namespace fa {

// Every key a config file may hold (and, with '-' for '_', every sweep flag).
const std::vector<std::string>& config_keys();

// Unresolved settings and where each came from, so an error can say
// "configs/x.json: key 'seqlen'" or "--seqlen".
struct ConfigSource {
  nlohmann::json values = nlohmann::json::object();
  std::map<std::string, std::string> origin;
};

// Reads a config file. UsageError for a missing file, malformed JSON (with the
// line, column and the last key before the error), a top level that is not an
// object, or an unknown key (with its line).
ConfigSource load_config_file(const std::string& path);
// Settings already parsed (a results file's metadata.config); `origin` names them.
ConfigSource config_from_json(const nlohmann::json&, const std::string& origin);
// A command-line value for `key`; it replaces the file's value. Setting one of
// batch/total_tokens (or heads/hidden) drops the other.
void apply_override(ConfigSource&, const std::string& key, const std::string& text,
                    const std::string& flag);

struct SweepConfig {
  std::vector<int> seqlen, seqlen_k;     // seqlen_k empty: equal to seqlen
  std::vector<int> head_dim;
  std::vector<int> batch, total_tokens;  // exactly one of them is set
  std::vector<int> heads, hidden;        // exactly one of them is set
  std::vector<int> heads_kv;             // empty: equal to heads
  bool block_auto = true;                // each family's default tile
  std::vector<Tile> block;               // when !block_auto
  std::vector<bool> causal{false};
  std::vector<DType> dtype{DType::bf16};
  std::vector<Pass> pass{Pass::fwd};     // fwd: fwd variants; bwd, fwd+bwd: bwd variants
  std::string kernels;                   // "": every kernel of the back end in use
  Distribution distribution = Distribution::normal;
  std::optional<uint64_t> seed;          // nullopt: fresh
  std::string backend = "auto";          // auto | cpu | cuda
  std::string json, csv, md;             // output files ("" = none)
  int64_t max_check_rows = 2048;
  TimingOptions timing;
  int threads = 0;                       // cpu back end; 0 = all hardware threads
  int64_t cpu_mem_limit = 0;             // bytes; 0 = half the machine's RAM
  bool counters = false;                 // cuda: read DRAM bytes from hardware counters
  std::string description;
  // The user's tensors (folder with q.npy, k.npy, v.npy): they fix batch,
  // seqlen, seqlen_k, heads, heads_kv and head_dim, and replace the generated
  // inputs (rounded to each point's dtype). "" = generated inputs.
  std::string inputs;
  std::shared_ptr<const UserInputs> user_inputs;  // loaded from `inputs` by resolve_config
  // Folder to write every validated run's O and LSE to as .npy ("" = none).
  std::string save_outputs;
  // Validate only, never time (fa-check): rows carry errors but no timing. Not
  // a config key: the sweep always times.
  bool validate_only = false;

  // Every setting by its key, fully resolved (seed included once chosen).
  nlohmann::json to_json() const;
};

// Typed, range-checked settings. UsageError naming the key and its origin.
SweepConfig resolve_config(const ConfigSource&);
// Points in a stable order (dtype, causal, head_dim, heads, heads_kv, batch,
// seqlen_k, seqlen innermost). The pass is not a point axis: every pass of a
// point shares its inputs and reference (sweep/plan.h). UsageError for a point that is not a valid
// problem (e.g. heads not divisible by heads_kv), naming the point.
std::vector<AttnProblem> expand_points(const SweepConfig&);

}  // namespace fa
