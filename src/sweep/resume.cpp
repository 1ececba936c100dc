#include "sweep/resume.h"

#include <set>

#include <fmt/format.h>

#include "report/json_limits.h"

namespace fa {

using nlohmann::json;

namespace {

std::string shown(const json& j) { return j.is_null() ? "(unset)" : dump_json(j, -1); }

const json& field(const json& obj, const char* key) {
  static const json null;
  if (!obj.is_object()) return null;
  auto it = obj.find(key);
  return it == obj.end() ? null : *it;
}

}  // namespace

std::vector<std::string> resume_differences(const json& meta, const RunIdentity& now) {
  std::vector<std::string> diffs;
  // seed is compared below, once, from the metadata.
  // devices: a resumed run may use other GPUs (each row records its own).
  // cooldown: a wait between rows, not how a row is made (each row records its clocks).
  static const std::set<std::string> unrelated = {"json",        "csv",     "md",   "save_outputs",
                                                  "description", "timeout", "seed", "devices", "cooldown"};
  const json& recorded = field(meta, "config");
  std::set<std::string> keys;
  if (recorded.is_object())
    for (auto& [k, v] : recorded.items()) keys.insert(k);
  if (now.config.is_object())
    for (auto& [k, v] : now.config.items()) keys.insert(k);
  for (const std::string& k : keys) {
    if (unrelated.count(k)) continue;
    const json& a = field(recorded, k.c_str());
    const json& b = field(now.config, k.c_str());
    if (a != b) diffs.push_back(fmt::format("{} {} -> {}", k, shown(a), shown(b)));
  }
  const json& seed = field(meta, "seed");
  if (!(seed.is_number_unsigned() || seed.is_number_integer()) || seed != json(now.seed))
    diffs.push_back(fmt::format("seed {} -> {}", shown(seed), now.seed));
  if (field(meta, "backend") != json(now.backend))
    diffs.push_back(fmt::format("backend {} -> \"{}\"", shown(field(meta, "backend")), now.backend));
  if (field(meta, "version") != json(now.version))
    diffs.push_back(fmt::format("fa-bench version {} -> \"{}\"", shown(field(meta, "version")), now.version));
  if (field(meta, "git_commit") != json(now.git_commit))
    diffs.push_back(fmt::format("fa-bench git_commit {} -> \"{}\"", shown(field(meta, "git_commit")), now.git_commit));
  return diffs;
}

}  // namespace fa
