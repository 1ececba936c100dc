#include "sweep/config.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/half.h"
#include "core/errors.h"
#include "report/input_file.h"
#include "report/json_limits.h"
#include "sweep/axis.h"
#include "sweep/values.h"

namespace fa {

using nlohmann::json;

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = {
      "description", "seqlen",     "seqlen_k",     "head_dim",     "block",       "batch",
      "total_tokens", "heads",     "hidden",       "heads_kv",     "causal",      "dtype",
      "kernels",     "distribution", "seed",       "backend",      "json",        "csv",
      "md",          "max_check_rows", "exact_check", "warmup",    "min_samples", "max_samples",
      "max_seconds", "target_noise", "flush_l2",   "threads",      "cpu_mem_limit", "counters",
      "timeout",     "inputs",     "save_outputs", "pass",        "shard",         "devices",      "fp8_scaling",  "fp8_hadamard",
      "cooldown"};
  return keys;
}

namespace {

// Limits of the typed settings (docs/CLI.md states them).
constexpr int kMaxHeadDim = 1024;
constexpr int kMaxThreads = 1024;
constexpr int64_t kMaxWarmup = 1000000;
constexpr int64_t kMaxSamples = 10000000;
constexpr double kMaxSeconds = 86400;        // one row's timing budget
constexpr double kMaxTimeout = 30 * 86400.0;  // the whole sweep
constexpr double kMaxCooldown = 3600;         // the wait before one row

size_t line_of_key(const std::string& text, const std::string& key) {
  size_t pos = text.find("\"" + key + "\"");
  return pos == std::string::npos ? 0 : position_of(text, pos).line;
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

bool known_key(const std::string& key) {
  const auto& keys = config_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// What a key's JSON value may be. The flag syntax is the one parser: a JSON
// number, boolean or list is written as the text a user would type, then parsed
// exactly as the flag is.
enum class Shape { integer_list, word_list, integer, real, boolean, word };

std::string scalar_text(const json& v, Shape shape, const std::string& where) {
  const bool integral = shape == Shape::integer_list || shape == Shape::integer;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (shape == Shape::word || shape == Shape::word_list || shape == Shape::boolean)
      throw UsageError(fmt::format("{}: {} is a number; expected a string", where, v.dump()));
    return v.dump();
  }
  if (v.is_number_float()) {
    if (integral) throw UsageError(fmt::format("{}: {} is not an integer; expected an integer", where, v.dump()));
    if (shape != Shape::real)
      throw UsageError(fmt::format("{}: {} is a number; expected a string", where, v.dump()));
    return v.dump();
  }
  if (v.is_boolean()) {
    if (shape != Shape::boolean && shape != Shape::word_list)
      throw UsageError(fmt::format("{}: {} is a boolean; expected {}", where, v.dump(),
                                   integral ? "an integer" : shape == Shape::real ? "a number" : "a string"));
    return v.get<bool>() ? "true" : "false";
  }
  throw UsageError(fmt::format("{}: got {} ({}); expected a number, a string{}", where, v.type_name(),
                               v.dump().substr(0, 40),
                               shape == Shape::integer_list || shape == Shape::word_list ? " or a list of them" : ""));
}

std::string json_text(const json& v, Shape shape, const std::string& where) {
  if (!v.is_array()) return scalar_text(v, shape, where);
  if (shape != Shape::integer_list && shape != Shape::word_list)
    throw UsageError(fmt::format("{}: got a list; expected a single value", where));
  if (v.empty()) throw UsageError(fmt::format("{}: empty list; expected at least one value", where));
  std::string out;
  for (const json& e : v) {
    if (e.is_array() || e.is_object())
      throw UsageError(fmt::format("{}: a list entry is {}; expected numbers or strings", where, e.type_name()));
    if (!out.empty()) out += ',';
    out += scalar_text(e, shape, where);
  }
  return out;
}

std::vector<int> int_axis(std::string_view text, const std::string& where, int lo = 1, int hi = INT_MAX) {
  return parse_int_axis(text, where, lo, hi);
}

// A list of named values (dtype, pass), each once.
template <typename T>
std::vector<T> named_axis(std::string_view text, const std::string& where, const char* what, const char* accepted,
                          std::optional<T> (*parse)(std::string_view)) {
  std::vector<T> out;
  for (const auto& s : split_list(text, where)) {
    const std::optional<T> v = parse(s);
    if (!v) throw UsageError(fmt::format("{}: unknown {} '{}'; expected {}", where, what, s, accepted));
    if (std::find(out.begin(), out.end(), *v) != out.end())
      throw UsageError(fmt::format("{}: {} appears twice in '{}'; expected each {} once", where, to_string(*v), text,
                                   what));
    out.push_back(*v);
  }
  return out;
}

std::string file_name(std::string_view text, const std::string& where, bool stdout_ok) {
  return parse_nonempty(text, where, stdout_ok ? "a file name, or - for standard output" : "a path");
}

// One entry per key: how its JSON value may look, and the one parser of its text.
struct Setting {
  const char* key;
  Shape shape;
  void (*apply)(SweepConfig&, std::string_view text, const std::string& where);
};

const std::vector<Setting>& settings() {
  using C = SweepConfig;
  using W = const std::string&;
  static const std::vector<Setting> table = {
      {"description", Shape::word, [](C& c, std::string_view t, W) { c.description = std::string(t); }},
      {"seqlen", Shape::integer_list, [](C& c, std::string_view t, W w) { c.seqlen = int_axis(t, w); }},
      {"seqlen_k", Shape::integer_list, [](C& c, std::string_view t, W w) { c.seqlen_k = int_axis(t, w); }},
      {"head_dim", Shape::integer_list,
       [](C& c, std::string_view t, W w) { c.head_dim = int_axis(t, w, 1, kMaxHeadDim); }},
      {"batch", Shape::integer_list, [](C& c, std::string_view t, W w) { c.batch = int_axis(t, w); }},
      {"total_tokens", Shape::integer_list,
       [](C& c, std::string_view t, W w) { c.total_tokens = int_axis(t, w); }},
      {"heads", Shape::integer_list, [](C& c, std::string_view t, W w) { c.heads = int_axis(t, w); }},
      {"hidden", Shape::integer_list, [](C& c, std::string_view t, W w) { c.hidden = int_axis(t, w); }},
      {"heads_kv", Shape::integer_list, [](C& c, std::string_view t, W w) { c.heads_kv = int_axis(t, w); }},
      {"block", Shape::word_list,
       [](C& c, std::string_view t, W w) {
         const bool is_auto = t == "auto";
         c.block_auto = is_auto;
         c.block = is_auto ? std::vector<Tile>{} : parse_block_list(t, w);
       }},
      {"causal", Shape::word_list, [](C& c, std::string_view t, W w) { c.causal = parse_bool_axis(t, w); }},
      {"dtype", Shape::word_list,
       [](C& c, std::string_view t, W w) { c.dtype = named_axis(t, w, "dtype", "bf16, fp16, fp32 or e4m3", parse_dtype); }},
      {"fp8_scaling", Shape::word,
       [](C& c, std::string_view t, W w) {
         auto s = parse_fp8_scaling(t);
         if (!s) throw UsageError(fmt::format("{}: unknown fp8 scaling '{}'; expected tensor, head or block", w, t));
         c.fp8_scaling = *s;
       }},
      {"fp8_hadamard", Shape::boolean, [](C& c, std::string_view t, W w) { c.fp8_hadamard = parse_boolean(t, w); }},
      {"pass", Shape::word_list,
       [](C& c, std::string_view t, W w) { c.pass = named_axis(t, w, "pass", "fwd, bwd or fwd+bwd", parse_pass); }},
      {"kernels", Shape::word_list,
       [](C& c, std::string_view t, W w) {
         const auto names = split_list(t, w);
         for (size_t i = 0; i < names.size(); ++i)
           if (std::find(names.begin(), names.begin() + i, names[i]) != names.begin() + i)
             throw UsageError(fmt::format("{}: '{}' appears twice; expected each selection once", w, names[i]));
         c.kernels = std::string(t);
       }},
      {"distribution", Shape::word,
       [](C& c, std::string_view t, W w) {
         auto d = parse_distribution(t);
         if (!d)
           throw UsageError(
               fmt::format("{}: unknown distribution '{}'; expected one of {}", w, t, distribution_names()));
         c.distribution = *d;
       }},
      {"seed", Shape::integer,
       [](C& c, std::string_view t, W w) {
         if (t == "fresh") c.seed.reset();
         else c.seed = parse_unsigned(t, w);
       }},
      {"backend", Shape::word,
       [](C& c, std::string_view t, W w) {
         if (t != "auto" && t != "cpu" && t != "cuda")
           throw UsageError(fmt::format("{}: unknown backend '{}'; expected auto, cpu or cuda", w, t));
         c.backend = std::string(t);
       }},
      {"json", Shape::word, [](C& c, std::string_view t, W w) { c.json = file_name(t, w, true); }},
      {"csv", Shape::word, [](C& c, std::string_view t, W w) { c.csv = file_name(t, w, true); }},
      {"md", Shape::word, [](C& c, std::string_view t, W w) { c.md = file_name(t, w, true); }},
      {"inputs", Shape::word, [](C& c, std::string_view t, W w) { c.inputs = file_name(t, w, false); }},
      {"save_outputs", Shape::word,
       [](C& c, std::string_view t, W w) { c.save_outputs = file_name(t, w, false); }},
      {"max_check_rows", Shape::integer,
       [](C& c, std::string_view t, W w) { c.max_check_rows = parse_integer(t, w, 1, INT_MAX); }},
      {"exact_check", Shape::boolean, [](C& c, std::string_view t, W w) { c.exact_check = parse_boolean(t, w); }},
      {"warmup", Shape::integer,
       [](C& c, std::string_view t, W w) { c.timing.warmup = int(parse_integer(t, w, 0, kMaxWarmup)); }},
      {"min_samples", Shape::integer,
       [](C& c, std::string_view t, W w) { c.timing.min_samples = int(parse_integer(t, w, 1, kMaxSamples)); }},
      {"max_samples", Shape::integer,
       [](C& c, std::string_view t, W w) { c.timing.max_samples = int(parse_integer(t, w, 1, kMaxSamples)); }},
      {"max_seconds", Shape::real,
       [](C& c, std::string_view t, W w) { c.timing.max_seconds = parse_real(t, w, 0, kMaxSeconds, true); }},
      {"target_noise", Shape::real,
       [](C& c, std::string_view t, W w) { c.timing.target_noise = parse_real(t, w, 0, 1, false); }},
      {"flush_l2", Shape::boolean, [](C& c, std::string_view t, W w) { c.timing.flush_l2 = parse_boolean(t, w); }},
      {"threads", Shape::integer,
       [](C& c, std::string_view t, W w) { c.threads = int(parse_integer(t, w, 0, kMaxThreads)); }},
      {"cpu_mem_limit", Shape::integer,
       [](C& c, std::string_view t, W w) { c.cpu_mem_limit = parse_bytes(t, w); }},
      {"counters", Shape::boolean, [](C& c, std::string_view t, W w) { c.counters = parse_boolean(t, w); }},
      {"timeout", Shape::real,
       [](C& c, std::string_view t, W w) { c.timeout = parse_real(t, w, 0, kMaxTimeout, true); }},
      {"cooldown", Shape::real,
       [](C& c, std::string_view t, W w) { c.cooldown = parse_real(t, w, 0, kMaxCooldown, false); }},
      {"shard", Shape::word, [](C& c, std::string_view t, W w) { c.shard = parse_shard(t, w); }},
      // A list of integers, or the word "all".
      {"devices", Shape::integer_list, [](C& c, std::string_view t, W w) { c.devices = parse_devices(t, w); }},
  };
  return table;
}

const Setting& setting(const std::string& key) {
  for (const Setting& s : settings())
    if (key == s.key) return s;
  throw UsageError(fmt::format("unknown setting '{}'", key));
}

// The pairs describe the same axis two ways: at most one of each is set.
std::string partner_of(const std::string& key) {
  if (key == "batch") return "total_tokens";
  if (key == "total_tokens") return "batch";
  if (key == "heads") return "hidden";
  if (key == "hidden") return "heads";
  return "";
}

void clear_partner(SweepConfig& c, const std::string& key) {
  if (key == "batch") c.batch.clear();
  if (key == "total_tokens") c.total_tokens.clear();
  if (key == "heads") c.heads.clear();
  if (key == "hidden") c.hidden.clear();
}

// Values the user's tensors take in each dtype of the sweep must stay finite:
// a value past fp16's range is bad input, not a kernel failure.
void check_inputs_fit(const UserInputs& u, const std::vector<DType>& dtypes, const std::string& where) {
  const char* names[] = {"q.npy", "k.npy", "v.npy"};
  const std::vector<float>* tensors[] = {&u.tensors.q, &u.tensors.k, &u.tensors.v};
  for (DType d : dtypes) {
    if (d == DType::f32 || d == DType::e4m3) continue;  // e4m3: quantized with a scale, it saturates
    for (int t = 0; t < 3; ++t) {
      for (size_t i = 0; i < tensors[t]->size(); ++i) {
        const float x = (*tensors[t])[i];
        if (!std::isfinite(d == DType::bf16 ? round_bf16(x) : round_f16(x)))
          throw UsageError(fmt::format("{}: {} element {} is {}, past the largest finite {} value; expected "
                                       "values that {} can hold (or --dtype fp32)",
                                       where, names[t], i, (*tensors[t])[i], to_string(d), to_string(d)));
      }
    }
  }
}

// The fp8 settings shape e4m3 inputs only, and e4m3 runs the forward only.
void check_fp8_settings(const SweepConfig& c, std::map<std::string, std::string>& from) {
  const bool e4m3 = std::find(c.dtype.begin(), c.dtype.end(), DType::e4m3) != c.dtype.end();
  const std::string dtype_from = from.count("dtype") ? from["dtype"] : "dtype (default bf16)";
  for (const char* key : {"fp8_scaling", "fp8_hadamard"})
    if (from.count(key) && !e4m3)
      throw UsageError(fmt::format("{}: applies to e4m3 inputs only, and {} has no e4m3; expected e4m3 among the "
                                   "dtypes (e.g. --dtype e4m3)",
                                   from[key], dtype_from));
  if (!e4m3) return;
  for (Pass x : c.pass)
    if (x != Pass::fwd)
      throw UsageError(fmt::format("{}: pass {} with e4m3 in {}: e4m3 is forward only; expected --pass fwd or a "
                                   "separate sweep for the 16-bit dtypes",
                                   from.count("pass") ? from["pass"] : "pass", to_string(x), dtype_from));
  if (c.fp8_hadamard)
    for (int d : c.head_dim)
      if (d & (d - 1))
        throw UsageError(fmt::format("{}: head_dim {} is not a power of two, which the Hadamard transform needs "
                                     "(from {}); expected head dims such as 64, 128, 256",
                                     from["fp8_hadamard"], d, from.count("head_dim") ? from["head_dim"] : "head_dim"));
}

}  // namespace

ConfigSource config_from_json(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) throw UsageError(fmt::format("{}: settings must be a JSON object", origin));
  ConfigSource src;
  for (auto& [key, value] : doc.items()) {
    if (!known_key(key)) throw UsageError(fmt::format("{}: unknown key '{}'", origin, key));
    if (value.is_null()) throw UsageError(fmt::format("{}: key '{}' is null", origin, key));
    src.file.push_back({key, value, origin});
  }
  return src;
}

ConfigSource load_config_file(const std::string& path) {
  const std::string text = read_input_file(path, "config file", int64_t(16) << 20);
  const json doc = parse_json_bounded(text, path);
  if (!doc.is_object())
    throw UsageError(fmt::format("{}: the top level must be a JSON object of settings, got {}", path,
                                 doc.type_name()));
  ConfigSource src;
  for (auto& [key, value] : doc.items()) {
    if (!known_key(key)) {
      std::string hint = nearest_key(key);
      throw UsageError(fmt::format("{}:{}: unknown key '{}'{}", path, line_of_key(text, key), key,
                                   hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
    }
    if (value.is_null())
      throw UsageError(fmt::format("{}:{}: key '{}' is null; remove it to use the default", path,
                                   line_of_key(text, key), key));
    src.file.push_back({key, value, fmt::format("{}:{}", path, line_of_key(text, key))});
  }
  return src;
}

void apply_override(ConfigSource& src, const std::string& key, const std::string& text,
                    const std::string& flag) {
  src.flags.push_back({key, text, flag});
}

SweepConfig resolve_config(const ConfigSource& src) {
  SweepConfig c;
  std::map<std::string, std::string> from;  // key -> where its value came from
  std::map<std::string, std::string> flag_of;
  for (const auto& f : src.flags) flag_of[f.key] = f.flag;

  // The file first; a key the command line sets (or whose partner it sets) is skipped.
  for (const auto& v : src.file) {
    if (flag_of.count(v.key) || flag_of.count(partner_of(v.key))) continue;
    const std::string where = fmt::format("{}: key '{}'", v.origin, v.key);
    const Setting& s = setting(v.key);
    s.apply(c, json_text(v.value, s.shape, where), where);
    from[v.key] = where;
  }
  for (const auto& f : src.flags) {
    const std::string partner = partner_of(f.key);
    if (!partner.empty() && flag_of.count(partner))
      throw UsageError(fmt::format("{} and {} both set; expected one ({} = {} / {})", flag_of[partner], f.flag,
                                   f.key == "batch" || f.key == "total_tokens" ? "batch" : "heads",
                                   f.key == "batch" || f.key == "total_tokens" ? "total_tokens" : "hidden",
                                   f.key == "batch" || f.key == "total_tokens" ? "seqlen" : "head_dim"));
    setting(f.key).apply(c, f.text, f.flag);
    from[f.key] = f.flag;
  }
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"batch", "total_tokens"}, {"heads", "hidden"}})
    if (from.count(a) && from.count(b))
      throw UsageError(fmt::format("{} and {} both set; expected one ({} = {} / {})", from[a], from[b], a, b,
                                   a == "batch" ? "seqlen" : "head_dim"));
  // The pair's other axis keeps its default only when neither was given.
  if (from.count("total_tokens")) clear_partner(c, "batch");
  if (from.count("hidden")) clear_partner(c, "heads");
  if (c.timing.max_samples < c.timing.min_samples)
    throw UsageError(fmt::format("{}: {} is below {} ({}); expected max_samples >= min_samples",
                                 from.count("max_samples") ? from["max_samples"] : "max_samples",
                                 c.timing.max_samples,
                                 from.count("min_samples") ? from["min_samples"] : "min_samples",
                                 c.timing.min_samples));
  check_fp8_settings(c, from);
  if (!c.inputs.empty()) {
    // The files fix the shape axes; axes given as well are replaced (and the
    // resolved config shows the shapes that ran).
    std::shared_ptr<UserInputs> u;
    try {
      u = std::make_shared<UserInputs>(load_user_inputs(c.inputs));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: {}", from["inputs"], e.what()));
    }
    check_inputs_fit(*u, c.dtype, from["inputs"]);
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
  c.origin = std::move(from);
  return c;
}

std::optional<Fp8Settings> SweepConfig::fp8_settings(DType d) const {
  if (d != DType::e4m3) return std::nullopt;
  return Fp8Settings{fp8_scaling, fp8_hadamard};
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
  if (std::find(dtype.begin(), dtype.end(), DType::e4m3) != dtype.end()) {
    j["fp8_scaling"] = std::string(to_string(fp8_scaling));
    j["fp8_hadamard"] = fp8_hadamard;
  }
  j["distribution"] = std::string(to_string(distribution));
  if (seed) j["seed"] = *seed;
  j["backend"] = backend;
  if (!json.empty()) j["json"] = json;
  if (!csv.empty()) j["csv"] = csv;
  if (!md.empty()) j["md"] = md;
  if (!inputs.empty()) j["inputs"] = inputs;
  if (!save_outputs.empty()) j["save_outputs"] = save_outputs;
  j["max_check_rows"] = max_check_rows;
  if (exact_check) j["exact_check"] = true;
  j["warmup"] = timing.warmup;
  j["min_samples"] = timing.min_samples;
  j["max_samples"] = timing.max_samples;
  j["max_seconds"] = timing.max_seconds;
  j["target_noise"] = timing.target_noise;
  j["flush_l2"] = timing.flush_l2;
  j["threads"] = threads;
  if (cpu_mem_limit > 0) j["cpu_mem_limit"] = cpu_mem_limit;
  j["counters"] = counters;
  if (timeout > 0) j["timeout"] = timeout;
  if (cooldown > 0) j["cooldown"] = cooldown;
  if (shard) j["shard"] = shard->str();
  if (devices) {
    if (devices->all) j["devices"] = "all";
    else j["devices"] = devices->indices;
  }
  return j;
}

namespace {
std::string named(const SweepConfig& c, const std::string& key) {
  auto it = c.origin.find(key);
  return it == c.origin.end() ? key : it->second;
}
}  // namespace

std::vector<AttnProblem> expand_points(const SweepConfig& c) {
  std::vector<AttnProblem> out;
  const bool by_hidden = !c.hidden.empty();
  const bool by_tokens = !c.total_tokens.empty();
  const std::vector<int>& head_axis = by_hidden ? c.hidden : c.heads;
  const std::vector<int>& batch_axis = by_tokens ? c.total_tokens : c.batch;
  // Each axis holds at most 4096 values, so the product of the eight fits a double exactly enough.
  const double points = double(c.dtype.size()) * double(c.causal.size()) * double(c.head_dim.size()) *
                        double(head_axis.size()) * double(std::max<size_t>(1, c.heads_kv.size())) *
                        double(batch_axis.size()) * double(std::max<size_t>(1, c.seqlen_k.size())) *
                        double(c.seqlen.size());
  if (points > double(kMaxPoints))
    throw UsageError(fmt::format("the sweep has {:.0f} points (the product of its axes); expected at most {}: "
                                 "split it into several sweeps",
                                 points, kMaxPoints));
  for (DType dtype : c.dtype)
    for (bool causal : c.causal)
      for (int head_dim : c.head_dim)
        for (int h : head_axis) {
          int heads = h;
          if (by_hidden) {
            if (h % head_dim != 0)
              throw UsageError(fmt::format("{}: {} is not divisible by head_dim {}; expected a multiple of "
                                           "head_dim (heads = hidden / head_dim)",
                                           named(c, "hidden"), h, head_dim));
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
                          "{}: {} is not a multiple of seqlen {}; expected a multiple of every seqlen (batch = "
                          "total_tokens / seqlen)",
                          named(c, "total_tokens"), b, seqlen));
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
