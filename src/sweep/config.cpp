#include "sweep/config.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "sweep/axis.h"

namespace fa {

using nlohmann::json;

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = {
      "description", "seqlen",     "seqlen_k",     "head_dim",     "block",       "batch",
      "total_tokens", "heads",     "hidden",       "heads_kv",     "causal",      "dtype",
      "kernels",     "distribution", "seed",       "backend",      "json",        "csv",
      "md",          "max_check_rows", "warmup",   "min_samples",  "max_samples", "max_seconds",
      "target_noise", "flush_l2",  "threads",      "cpu_mem_limit", "counters",
      "inputs",      "save_outputs", "pass"};
  return keys;
}

namespace {

struct LineCol {
  size_t line = 1, col = 1;
};
LineCol line_col(const std::string& text, size_t byte) {
  LineCol lc;
  for (size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      lc.col = 1;
    } else {
      ++lc.col;
    }
  }
  return lc;
}

// The last "key": before `byte`, so a syntax error can name what it was inside.
std::string last_key_before(const std::string& text, size_t byte) {
  static const std::regex key_re(R"re("([A-Za-z_][A-Za-z0-9_]*)"\s*:)re");
  std::string head = text.substr(0, std::min(byte, text.size()));
  std::string last;
  for (auto it = std::sregex_iterator(head.begin(), head.end(), key_re); it != std::sregex_iterator();
       ++it)
    last = (*it)[1];
  return last;
}

size_t line_of_key(const std::string& text, const std::string& key) {
  size_t pos = text.find("\"" + key + "\"");
  return pos == std::string::npos ? 0 : line_col(text, pos).line;
}

std::string nearest_key(const std::string& key) {
  // A cheap edit distance is enough to catch "seqlens" or "head-dim".
  auto dist = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = 3;
  for (const auto& k : config_keys()) {
    size_t d = dist(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

std::string type_name(const json& v) { return v.type_name(); }

// Where a key's value came from, for error messages.
std::string where(const ConfigSource& src, const std::string& key) {
  auto it = src.origin.find(key);
  if (it == src.origin.end()) return fmt::format("'{}'", key);
  if (it->second.rfind("--", 0) == 0) return it->second;
  return fmt::format("{}: key '{}'", it->second, key);
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  return "";
}

// Axis value as text: "512", "512:16384:x2", [512, "1024:4096:x2"], true, ["bf16"].
std::string axis_text(const ConfigSource& src, const std::string& key) {
  const json& v = src.values.at(key);
  if (v.is_array()) {
    if (v.empty()) throw UsageError(fmt::format("{}: empty list", where(src, key)));
    std::vector<std::string> parts;
    for (const json& e : v) {
      std::string s = scalar_text(e);
      if (s.empty())
        throw UsageError(fmt::format("{}: list entries must be numbers, strings or booleans, got {}",
                                     where(src, key), type_name(e)));
      parts.push_back(s);
    }
    return fmt::format("{}", fmt::join(parts, ","));
  }
  std::string s = scalar_text(v);
  if (s.empty())
    throw UsageError(fmt::format("{}: expected a value, a string or a list, got {}",
                                 where(src, key), type_name(v)));
  return s;
}

bool has(const ConfigSource& src, const std::string& key) { return src.values.contains(key); }

std::vector<int> int_axis(const ConfigSource& src, const std::string& key, int min_value) {
  std::vector<int> vals = parse_int_axis(axis_text(src, key), where(src, key));
  for (int v : vals)
    if (v < min_value)
      throw UsageError(fmt::format("{}: values must be >= {} (got {})", where(src, key), min_value, v));
  return vals;
}

double number(const ConfigSource& src, const std::string& key) {
  const json& v = src.values.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
    throw UsageError(fmt::format("{}: '{}' is not a number", where(src, key), s));
  }
  throw UsageError(fmt::format("{}: expected a number, got {}", where(src, key), type_name(v)));
}

int64_t integer(const ConfigSource& src, const std::string& key, int64_t min_value) {
  const json& v = src.values.at(key);
  int64_t out = 0;
  if (v.is_number_integer() || v.is_number_unsigned()) {
    out = v.get<int64_t>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
      throw UsageError(fmt::format("{}: '{}' is not an integer", where(src, key), s));
  } else {
    throw UsageError(fmt::format("{}: expected an integer, got {}", where(src, key), type_name(v)));
  }
  if (out < min_value)
    throw UsageError(fmt::format("{}: must be >= {} (got {})", where(src, key), min_value, out));
  return out;
}

bool boolean(const ConfigSource& src, const std::string& key) {
  const json& v = src.values.at(key);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
  }
  throw UsageError(fmt::format("{}: expected true or false, got {}", where(src, key), v.dump()));
}

std::string string_value(const ConfigSource& src, const std::string& key) {
  const json& v = src.values.at(key);
  if (!v.is_string())
    throw UsageError(fmt::format("{}: expected a string, got {}", where(src, key), type_name(v)));
  return v.get<std::string>();
}

}  // namespace

ConfigSource config_from_json(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) throw UsageError(fmt::format("{}: settings must be a JSON object", origin));
  ConfigSource src;
  const auto& keys = config_keys();
  for (auto& [key, value] : doc.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw UsageError(fmt::format("{}: unknown key '{}'", origin, key));
    src.values[key] = value;
    src.origin[key] = origin;
  }
  return src;
}

ConfigSource load_config_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("config file '{}' cannot be opened (missing or unreadable)", path));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    LineCol lc = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string key = last_key_before(text, e.byte);
    // nlohmann's what() is "[json.exception.parse_error.101] parse error at line 3,
    // column 15: syntax error while parsing ..."; the position is already ours.
    std::string why = e.what();
    auto col = why.find("column ");
    auto pos = col == std::string::npos ? std::string::npos : why.find(": ", col);
    if (pos != std::string::npos) why = why.substr(pos + 2);
    throw UsageError(fmt::format("{}:{}:{}: malformed JSON{}: {}", path, lc.line, lc.col,
                                 key.empty() ? "" : fmt::format(" (after key '{}')", key), why));
  }
  if (!doc.is_object())
    throw UsageError(fmt::format("{}: the top level must be a JSON object of settings, got {}", path,
                                 doc.type_name()));
  ConfigSource src;
  const auto& keys = config_keys();
  for (auto& [key, value] : doc.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string hint = nearest_key(key);
      throw UsageError(fmt::format("{}:{}: unknown key '{}'{}", path, line_of_key(text, key), key,
                                   hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
    }
    if (value.is_null())
      throw UsageError(fmt::format("{}:{}: key '{}' is null; remove it to use the default", path,
                                   line_of_key(text, key), key));
    src.values[key] = value;
    src.origin[key] = fmt::format("{}:{}", path, line_of_key(text, key));
  }
  return src;
}

void apply_override(ConfigSource& src, const std::string& key, const std::string& text,
                    const std::string& flag) {
  // The pairs describe the same axis two ways; the command line's choice wins.
  static const std::map<std::string, std::string> exclusive = {
      {"batch", "total_tokens"}, {"total_tokens", "batch"}, {"heads", "hidden"}, {"hidden", "heads"}};
  if (auto it = exclusive.find(key); it != exclusive.end()) {
    auto o = src.origin.find(it->second);
    if (o != src.origin.end() && o->second.rfind("--", 0) != 0) {
      src.values.erase(it->second);
      src.origin.erase(o);
    }
  }
  src.values[key] = text;
  src.origin[key] = flag;
}

SweepConfig resolve_config(const ConfigSource& src) {
  SweepConfig c;
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"batch", "total_tokens"},
                             {"heads", "hidden"}})
    if (has(src, a) && has(src, b))
      throw UsageError(fmt::format("{} and {} both set: give one ({} = {} / {})", where(src, a),
                                   where(src, b), a, b, a == "batch" ? "seqlen" : "head_dim"));

  c.seqlen = has(src, "seqlen") ? int_axis(src, "seqlen", 1) : std::vector<int>{1024};
  if (has(src, "seqlen_k")) c.seqlen_k = int_axis(src, "seqlen_k", 1);
  c.head_dim = has(src, "head_dim") ? int_axis(src, "head_dim", 1) : std::vector<int>{128};
  for (int d : c.head_dim)
    if (d > 1024) throw UsageError(fmt::format("{}: head_dim must be <= 1024 (got {})", where(src, "head_dim"), d));
  if (has(src, "total_tokens"))
    c.total_tokens = int_axis(src, "total_tokens", 1);
  else
    c.batch = has(src, "batch") ? int_axis(src, "batch", 1) : std::vector<int>{1};
  if (has(src, "hidden"))
    c.hidden = int_axis(src, "hidden", 1);
  else
    c.heads = has(src, "heads") ? int_axis(src, "heads", 1) : std::vector<int>{8};
  if (has(src, "heads_kv")) c.heads_kv = int_axis(src, "heads_kv", 1);

  if (has(src, "block")) {
    std::string text = axis_text(src, "block");
    if (text == "auto") {
      c.block_auto = true;
    } else {
      c.block_auto = false;
      c.block = parse_block_list(text, where(src, "block"));
    }
  }
  if (has(src, "causal")) c.causal = parse_bool_axis(axis_text(src, "causal"), where(src, "causal"));
  if (has(src, "dtype")) {
    c.dtype.clear();
    for (const auto& s : split_list(axis_text(src, "dtype"), where(src, "dtype"))) {
      auto d = parse_dtype(s);
      if (!d) throw UsageError(fmt::format("{}: unknown dtype '{}' (bf16, fp16, fp32)", where(src, "dtype"), s));
      c.dtype.push_back(*d);
    }
  }
  if (has(src, "pass")) {
    c.pass.clear();
    for (const auto& s : split_list(axis_text(src, "pass"), where(src, "pass"))) {
      auto ps = parse_pass(s);
      if (!ps) throw UsageError(fmt::format("{}: unknown pass '{}' (fwd, bwd, fwd+bwd)", where(src, "pass"), s));
      if (std::find(c.pass.begin(), c.pass.end(), *ps) != c.pass.end())
        throw UsageError(fmt::format("{}: pass '{}' given twice", where(src, "pass"), s));
      c.pass.push_back(*ps);
    }
  }
  if (has(src, "kernels")) c.kernels = axis_text(src, "kernels");
  if (has(src, "distribution")) {
    std::string s = string_value(src, "distribution");
    auto d = parse_distribution(s);
    if (!d)
      throw UsageError(fmt::format("{}: unknown distribution '{}' (normal, uniform, adversarial)",
                                   where(src, "distribution"), s));
    c.distribution = *d;
  }
  if (has(src, "seed")) {
    const json& v = src.values.at("seed");
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
      c.seed = v.get<uint64_t>();
    } else if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s != "fresh") {
        uint64_t out = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        if (s.empty() || ec != std::errc() || p != s.data() + s.size())
          throw UsageError(fmt::format("{}: '{}' is not an unsigned integer or 'fresh'", where(src, "seed"), s));
        c.seed = out;
      }
    } else {
      throw UsageError(fmt::format("{}: expected an unsigned integer, got {}", where(src, "seed"), v.dump()));
    }
  }
  if (has(src, "backend")) {
    c.backend = string_value(src, "backend");
    if (c.backend != "auto" && c.backend != "cpu" && c.backend != "cuda")
      throw UsageError(fmt::format("{}: unknown backend '{}' (auto, cpu, cuda)", where(src, "backend"), c.backend));
  }
  if (has(src, "json")) c.json = string_value(src, "json");
  if (has(src, "csv")) c.csv = string_value(src, "csv");
  if (has(src, "md")) c.md = string_value(src, "md");
  if (has(src, "description")) c.description = string_value(src, "description");
  if (has(src, "save_outputs")) c.save_outputs = string_value(src, "save_outputs");
  if (has(src, "max_check_rows")) c.max_check_rows = integer(src, "max_check_rows", 1);
  if (has(src, "warmup")) c.timing.warmup = int(integer(src, "warmup", 0));
  if (has(src, "min_samples")) c.timing.min_samples = int(integer(src, "min_samples", 1));
  if (has(src, "max_samples")) c.timing.max_samples = int(integer(src, "max_samples", 1));
  if (c.timing.max_samples < c.timing.min_samples)
    throw UsageError(fmt::format("max_samples ({}) must be >= min_samples ({})", c.timing.max_samples,
                                 c.timing.min_samples));
  if (has(src, "max_seconds")) {
    c.timing.max_seconds = number(src, "max_seconds");
    if (!(c.timing.max_seconds > 0))
      throw UsageError(fmt::format("{}: must be > 0", where(src, "max_seconds")));
  }
  if (has(src, "target_noise")) {
    c.timing.target_noise = number(src, "target_noise");
    if (!(c.timing.target_noise >= 0))
      throw UsageError(fmt::format("{}: must be >= 0", where(src, "target_noise")));
  }
  if (has(src, "flush_l2")) c.timing.flush_l2 = boolean(src, "flush_l2");
  if (has(src, "threads")) c.threads = int(integer(src, "threads", 0));
  if (has(src, "cpu_mem_limit")) {
    const json& v = src.values.at("cpu_mem_limit");
    c.cpu_mem_limit = v.is_string() ? parse_bytes(v.get<std::string>(), where(src, "cpu_mem_limit"))
                                    : integer(src, "cpu_mem_limit", 1);
  }
  if (has(src, "counters")) c.counters = boolean(src, "counters");
  if (has(src, "inputs")) {
    // The files fix the shape axes; axes given as well are replaced (and the
    // resolved config shows the shapes that ran).
    c.inputs = string_value(src, "inputs");
    auto u = std::make_shared<UserInputs>(load_user_inputs(c.inputs));
    c.batch = {u->batch};
    c.total_tokens.clear();
    c.seqlen = {u->seqlen_q};
    c.seqlen_k = {u->seqlen_k};
    c.heads = {u->heads};
    c.hidden.clear();
    c.heads_kv = {u->heads_kv};
    c.head_dim = {u->head_dim};
    c.user_inputs = std::move(u);
  }
  return c;
}

nlohmann::json SweepConfig::to_json() const {
  // Only keys that are set, in the form a config file takes, so a results
  // file's metadata.config can be loaded back (resume without --config).
  using J = nlohmann::json;
  J j = J::object();
  if (!description.empty()) j["description"] = description;
  j["seqlen"] = seqlen;
  if (!seqlen_k.empty()) j["seqlen_k"] = seqlen_k;
  j["head_dim"] = head_dim;
  if (!total_tokens.empty()) j["total_tokens"] = total_tokens;
  else j["batch"] = batch;
  if (!hidden.empty()) j["hidden"] = hidden;
  else j["heads"] = heads;
  if (!heads_kv.empty()) j["heads_kv"] = heads_kv;
  if (block_auto) {
    j["block"] = "auto";
  } else {
    J b = J::array();
    for (const Tile& t : block) b.push_back(fmt::format("{}x{}", t.block_m, t.block_n));
    j["block"] = b;
  }
  j["causal"] = causal;
  J d = J::array();
  for (DType t : dtype) d.push_back(std::string(to_string(t)));
  j["dtype"] = d;
  J ps = J::array();
  for (Pass x : pass) ps.push_back(std::string(to_string(x)));
  j["pass"] = ps;
  if (!kernels.empty()) j["kernels"] = kernels;
  j["distribution"] = std::string(to_string(distribution));
  if (seed) j["seed"] = *seed;
  j["backend"] = backend;
  if (!json.empty()) j["json"] = json;
  if (!csv.empty()) j["csv"] = csv;
  if (!md.empty()) j["md"] = md;
  if (!inputs.empty()) j["inputs"] = inputs;
  if (!save_outputs.empty()) j["save_outputs"] = save_outputs;
  j["max_check_rows"] = max_check_rows;
  j["warmup"] = timing.warmup;
  j["min_samples"] = timing.min_samples;
  j["max_samples"] = timing.max_samples;
  j["max_seconds"] = timing.max_seconds;
  j["target_noise"] = timing.target_noise;
  j["flush_l2"] = timing.flush_l2;
  j["threads"] = threads;
  if (cpu_mem_limit > 0) j["cpu_mem_limit"] = cpu_mem_limit;
  j["counters"] = counters;
  return j;
}

std::vector<AttnProblem> expand_points(const SweepConfig& c) {
  std::vector<AttnProblem> out;
  const bool by_hidden = !c.hidden.empty();
  const bool by_tokens = !c.total_tokens.empty();
  const std::vector<int>& head_axis = by_hidden ? c.hidden : c.heads;
  const std::vector<int>& batch_axis = by_tokens ? c.total_tokens : c.batch;
  for (DType dtype : c.dtype)
    for (bool causal : c.causal)
      for (int head_dim : c.head_dim)
        for (int h : head_axis) {
          int heads = h;
          if (by_hidden) {
            if (h % head_dim != 0)
              throw UsageError(fmt::format("hidden {} is not divisible by head_dim {} (heads = hidden / head_dim)",
                                           h, head_dim));
            heads = h / head_dim;
          }
          std::vector<int> kv_axis = c.heads_kv.empty() ? std::vector<int>{heads} : c.heads_kv;
          for (int heads_kv : kv_axis)
            for (int b : batch_axis)
              for (size_t ik = 0; ik < (c.seqlen_k.empty() ? 1 : c.seqlen_k.size()); ++ik)
                for (int seqlen : c.seqlen) {
                  AttnProblem p;
                  p.dtype = dtype;
                  p.causal = causal;
                  p.head_dim = head_dim;
                  p.heads = heads;
                  p.heads_kv = heads_kv;
                  p.seqlen_q = seqlen;
                  p.seqlen_k = c.seqlen_k.empty() ? seqlen : c.seqlen_k[ik];
                  if (by_tokens) {
                    // The papers fix batch * seqlen (e.g. 16384): batch = total_tokens / seqlen.
                    if (b < seqlen || b % seqlen != 0)
                      throw UsageError(fmt::format(
                          "total_tokens {} is not a multiple of seqlen {} (batch = total_tokens / seqlen)",
                          b, seqlen));
                    p.batch = b / seqlen;
                  } else {
                    p.batch = b;
                  }
                  if (std::string why = p.invalid_reason(); !why.empty())
                    throw UsageError(fmt::format("invalid point {}: {}", p.describe(), why));
                  out.push_back(p);
                }
        }
  return out;
}

}  // namespace fa
