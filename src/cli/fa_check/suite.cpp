#include "cli/fa_check/suite.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common/source_tree.h"
#include "core/errors.h"
#include "report/input_file.h"
#include "report/json_limits.h"
#include "sweep/values.h"

namespace fa::check {

namespace {

int parse_int(const std::string& s, const std::string& token, const std::string& where) {
  return int(parse_integer(s, fmt::format("{}: '{}'", where, token), 1, INT_MAX));
}

}  // namespace

AttnProblem parse_case(const std::string& text, const std::string& where) {
  AttnProblem p;
  bool seen_b = false, seen_h = false, seen_q = false, seen_k = false, seen_d = false, seen_t = false;
  std::istringstream in(text);
  std::string tok;
  std::string seen_tokens;
  while (in >> tok) {
    const char c = tok[0];
    const char kind = tok == "causal" ? 'C' : parse_dtype(tok) ? 'T' : c;
    if (seen_tokens.find(kind) != std::string::npos)
      throw UsageError(fmt::format("{}: '{}' repeats a part of case '{}'; expected each of b, h, q, k, d, the "
                                   "dtype and causal once",
                                   where, tok, text));
    seen_tokens += kind;
    const std::string rest = tok.substr(1);
    if (tok == "causal") {
      p.causal = true;
    } else if (auto dt = parse_dtype(tok)) {
      p.dtype = *dt;
      seen_t = true;
    } else if (c == 'b') {
      p.batch = parse_int(rest, tok, where), seen_b = true;
    } else if (c == 'h') {
      const auto slash = rest.find('/');
      if (slash == std::string::npos)
        throw UsageError(fmt::format("{}: '{}' must be h<heads>/<heads_kv>, e.g. h8/2", where, tok));
      p.heads = parse_int(rest.substr(0, slash), tok, where);
      p.heads_kv = parse_int(rest.substr(slash + 1), tok, where);
      seen_h = true;
    } else if (c == 'q') {
      p.seqlen_q = parse_int(rest, tok, where), seen_q = true;
    } else if (c == 'k') {
      p.seqlen_k = parse_int(rest, tok, where), seen_k = true;
    } else if (c == 'd') {
      p.head_dim = parse_int(rest, tok, where), seen_d = true;
    } else {
      throw UsageError(fmt::format("{}: unknown token '{}' in case '{}' (expected like "
                                   "'b1 h4/2 q257 k300 d64 bf16 causal')", where, tok, text));
    }
  }
  if (!(seen_b && seen_h && seen_q && seen_k && seen_d && seen_t))
    throw UsageError(fmt::format("{}: case '{}' must name b, h, q, k, d and a dtype, e.g. "
                                 "'b1 h4/2 q257 k300 d64 bf16 causal'", where, text));
  if (std::string why = p.invalid_reason(); !why.empty())
    throw UsageError(fmt::format("{}: case '{}': {}", where, text, why));
  return p;
}

std::vector<CheckCase> load_suite(const std::string& path) {
  const nlohmann::json doc =
      parse_json_bounded(read_input_file(path, "check suite (--config)", int64_t(16) << 20), path);
  if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array())
    throw UsageError(fmt::format("{}: a check suite is an object with a \"cases\" array", path));
  std::vector<CheckCase> cases;
  for (size_t i = 0; i < doc["cases"].size(); ++i) {
    const auto& j = doc["cases"][i];
    const std::string where = fmt::format("{}: cases[{}]", path, i);
    if (!j.is_object() || !j.contains("case") || !j["case"].is_string())
      throw UsageError(where + ": needs \"case\": \"b1 h4/2 q257 k300 d64 bf16 causal\"");
    for (const auto& [key, value] : j.items())
      if (key != "case" && key != "distributions" && key != "pass" && key != "quick" && key != "backend" &&
          key != "fp8_scaling" && key != "fp8_hadamard" && key != "why")
        throw UsageError(fmt::format("{}: unknown key '{}' (case, distributions, pass, quick, backend, fp8_scaling, "
                                     "fp8_hadamard, why)",
                                     where, key));
    CheckCase c;
    c.problem = parse_case(j["case"].get<std::string>(), where);
    auto want = [&](const char* key, bool ok, const char* what) {
      if (j.contains(key) && !ok)
        throw UsageError(fmt::format("{}: \"{}\" is {}; expected {}", where, key, j[key].dump().substr(0, 40), what));
    };
    want("distributions", j.contains("distributions") && j["distributions"].is_array(),
         "a list such as [\"normal\", \"adversarial\"]");
    want("quick", j.contains("quick") && j["quick"].is_boolean(), "true or false");
    want("backend", j.contains("backend") && j["backend"].is_string(), "\"cpu\" or \"cuda\"");
    want("why", j.contains("why") && j["why"].is_string(), "a string");
    want("pass", j.contains("pass") && j["pass"].is_array(), "a list such as [\"fwd\", \"bwd\"]");
    if (j.contains("distributions")) {
      c.distributions.clear();
      for (const auto& d : j["distributions"]) {
        auto dist = d.is_string() ? parse_distribution(d.get<std::string>()) : std::nullopt;
        if (!dist)
          throw UsageError(fmt::format("{}: unknown distribution {} ({})", where, d.dump(),
                                       distribution_names()));
        c.distributions.push_back(*dist);
      }
      if (c.distributions.empty()) throw UsageError(where + ": \"distributions\" is empty");
    }
    if (j.contains("pass")) {
      c.passes.clear();
      for (const auto& x : j["pass"]) {
        auto ps = x.is_string() ? parse_pass(x.get<std::string>()) : std::nullopt;
        if (!ps || *ps == Pass::fwd_bwd)
          throw UsageError(fmt::format("{}: \"pass\" entries are fwd or bwd (fa-check does not time, so fwd+bwd "
                                       "would check what bwd does), got {}",
                                       where, x.dump()));
        if (std::find(c.passes.begin(), c.passes.end(), *ps) != c.passes.end())
          throw UsageError(fmt::format("{}: \"pass\" holds {} twice; expected each pass once", where, x.dump()));
        c.passes.push_back(*ps);
      }
      if (c.passes.empty()) throw UsageError(where + ": \"pass\" is empty");
    }
    if (j.contains("quick")) c.quick = j["quick"].get<bool>();
    if (j.contains("backend")) {
      c.backend = parse_backend(j["backend"].get<std::string>());
      if (!c.backend) throw UsageError(where + ": \"backend\" is cpu or cuda");
    }
    want("fp8_scaling", j.contains("fp8_scaling") && j["fp8_scaling"].is_string(), "\"tensor\", \"head\" or \"block\"");
    want("fp8_hadamard", j.contains("fp8_hadamard") && j["fp8_hadamard"].is_boolean(), "true or false");
    if ((j.contains("fp8_scaling") || j.contains("fp8_hadamard")) && c.problem.dtype != DType::e4m3)
      throw UsageError(where + ": \"fp8_scaling\" and \"fp8_hadamard\" are for e4m3 cases");
    if (j.contains("fp8_scaling")) {
      const auto s = parse_fp8_scaling(j["fp8_scaling"].get<std::string>());
      if (!s) throw UsageError(where + ": \"fp8_scaling\" is tensor, head or block");
      c.fp8.fp8_scaling = *s;
    }
    if (j.contains("fp8_hadamard")) c.fp8.fp8_hadamard = j["fp8_hadamard"].get<bool>();
    if (j.contains("why")) c.why = j["why"].get<std::string>();
    cases.push_back(std::move(c));
  }
  if (cases.empty()) throw UsageError(fmt::format("{}: no cases", path));
  return cases;
}

std::string default_suite_path() {
  const std::string found = cli::find_source_tree_file("configs/check.json");
  return found.empty() ? "configs/check.json" : found;  // the open fails with a message naming it
}

}  // namespace fa::check
