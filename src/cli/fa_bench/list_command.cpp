// `fa-bench list`: every registered kernel variant, as a Markdown table.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/fa_bench/list_options.h"
#include "cli/fa_bench/subcommand.h"
#include "core/errors.h"
#include "sweep/values.h"
#include "measure/executor.h"
#include "registry/kernel.h"

namespace fa::cli {

namespace {

int run_list(const ListOptions& o) {
  const Registry& reg = Registry::instance();
  std::vector<const KernelVariant*> vs;
  if (o.kernels.empty()) {
    for (const auto& v : reg.all()) vs.push_back(&v);
  } else {
    vs = reg.select(o.kernels);
  }
  // "Can it run here" needs a back end: cpu always can; cuda needs a device.
  std::string cuda_why;
  bool check = !o.backend.empty();
  bool cuda_ok = false;
  if (check) {
    if (!parse_backend(o.backend)) throw UsageError(fmt::format("--backend: unknown '{}' (cpu, cuda)", o.backend));
    if (*parse_backend(o.backend) == Backend::cuda) cuda_ok = make_cuda_executor(0, &cuda_why) != nullptr;
  }
  fmt::print("| name | family | backend | pass | tile | dtypes | head_dims | default_tile | fwd_partner |{}\n",
             check ? " runs here |" : "");
  fmt::print("|---|---|---|---|---|---|---|---|---|{}\n", check ? "---|" : "");
  for (const KernelVariant* v : vs) {
    std::vector<std::string> dts;
    for (DType t : v->dtypes) dts.emplace_back(to_string(t));
    std::string runs;
    if (check) {
      Backend want = *parse_backend(o.backend);
      if (v->backend != want)
        runs = fmt::format(" no: a {} kernel |", to_string(v->backend));
      else if (want == Backend::cpu || cuda_ok)
        runs = " yes |";
      else
        runs = fmt::format(" no: {} |", cuda_why);
    }
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} |{}\n", v->name, to_string(v->family),
               to_string(v->backend), to_string(v->pass), v->tile.str(),
               dts.empty() ? "any" : fmt::format("{}", fmt::join(dts, ",")),
               v->head_dims.empty() ? "any" : fmt::format("{}", fmt::join(v->head_dims, ",")),
               v->default_tile ? "yes" : "no", v->fwd_partner.empty() ? "-" : v->fwd_partner, runs);
  }
  return 0;
}

}  // namespace

Subcommand setup_list(CLI::App& parent) {
  auto opts = std::make_shared<ListOptions>();
  CLI::App* sub = parent.add_subcommand("list", "List every registered kernel variant");
  sub->add_option("--backend", opts->backend,
                  "Also say whether each variant can run here on this back end (cpu or cuda). "
                  "Example: --backend cuda");
  sub->add_option("--kernels", opts->kernels,
                  "Only these: names, families, back ends or globs. Example: --kernels 'fa2.bf16.*'");
  return Subcommand{sub, [opts, sub] {
                      if (sub->get_option("--kernels")->count() > 0)
                        parse_nonempty(opts->kernels, "--kernels", "a kernel selection, e.g. 'fa2.bf16.*'");
                      if (sub->get_option("--backend")->count() > 0)
                        parse_nonempty(opts->backend, "--backend", "cpu or cuda");
                      return run_list(*opts);
                    }};
}

}  // namespace fa::cli
