// The registry: every kernel variant, CPU and GPU, and the --kernels selection
// language (exact names, families, back ends, "cpu.fa2", globs).
#include <algorithm>
#include <fmt/format.h>
#include <mutex>

#include "core/errors.h"
#include "registry/kernel.h"

namespace fa {

Support KernelVariant::supports(const AttnProblem& p) const {
  if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), p.dtype) == dtypes.end())
    return Support::no(fmt::format("dtype {} not built", to_string(p.dtype)));
  if (!head_dims.empty() &&
      std::find(head_dims.begin(), head_dims.end(), p.head_dim) == head_dims.end())
    return Support::no(fmt::format("head_dim {} not built", p.head_dim));
  if (refuse) {
    std::string why = refuse(p);
    if (!why.empty()) return Support::no(std::move(why));
  }
  return Support::yes();
}

Registry& Registry::instance() {
  static Registry registry;
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_kernels(registry);
    register_cuda_kernels(registry);
  });
  return registry;
}

void Registry::add(KernelVariant v) {
  if (v.name.empty()) throw UsageError("Registry::add: a kernel variant without a name");
  if (find(v.name)) throw UsageError(fmt::format("Registry::add: '{}' registered twice", v.name));
  variants_.push_back(std::move(v));
}

const KernelVariant* Registry::find(std::string_view name) const {
  for (const auto& v : variants_)
    if (v.name == name) return &v;
  return nullptr;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Does one selection entry pick variant v?
bool entry_matches(std::string_view entry, const KernelVariant& v) {
  if (entry == v.name) return true;
  if (entry.find_first_of("*?") != std::string_view::npos) return glob_match(entry, v.name);
  if (auto b = parse_backend(entry)) return v.backend == *b;
  if (auto f = parse_family(entry)) return v.family == *f;
  // "<backend>.<family>", e.g. "cpu.fa2" or "cuda.fa3".
  if (auto dot = entry.find('.'); dot != std::string_view::npos) {
    auto b = parse_backend(entry.substr(0, dot));
    auto f = parse_family(entry.substr(dot + 1));
    if (b && f) return v.backend == *b && v.family == *f;
  }
  return false;
}

}  // namespace

std::vector<const KernelVariant*> Registry::select(std::string_view selection) const {
  std::vector<std::string_view> entries;
  for (size_t pos = 0; pos <= selection.size();) {
    size_t comma = selection.find(',', pos);
    if (comma == std::string_view::npos) comma = selection.size();
    auto e = trim(selection.substr(pos, comma - pos));
    if (!e.empty()) entries.push_back(e);
    pos = comma + 1;
  }
  if (entries.empty()) throw UsageError("--kernels: empty selection");

  std::vector<bool> picked(variants_.size(), false);
  for (auto e : entries) {
    bool any = false;
    for (size_t i = 0; i < variants_.size(); ++i)
      if (entry_matches(e, variants_[i])) picked[i] = any = true;
    if (!any)
      throw UsageError(fmt::format(
          "--kernels: '{}' matches no kernel (use an exact name, a family such as fa2, a back "
          "end cpu/cuda, '<backend>.<family>' or a glob; {} variants registered, `fa-bench list` shows them)",
          e, variants_.size()));
  }
  std::vector<const KernelVariant*> out;
  for (size_t i = 0; i < variants_.size(); ++i)
    if (picked[i]) out.push_back(&variants_[i]);
  return out;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative match with backtracking to the last '*': linear in practice.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace fa
