// The CPU back end's entry table (cpu_kernels.h).
#include <unistd.h>

#include <fmt/format.h>

#include "cpu/cpu_kernels.h"
#include "cpu/fa2_bwd.h"

namespace fa {
namespace {

// Standard attention holds S and P for every (batch, head); refuse a point whose
// workspace exceeds half this machine's memory rather than be killed by the OOM killer.
std::string refuse_standard(const AttnProblem& p) {
  const int64_t need = cpu_standard_workspace_bytes(p);
  const int64_t phys = int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
  if (phys > 0 && need > phys / 2)
    return fmt::format("standard attention needs {:.1f} GiB for S and P, over half of this "
                       "machine's {:.1f} GiB", need / 1073741824.0, phys / 1073741824.0);
  return "";
}

int64_t no_workspace(const AttnProblem&) { return 0; }

}  // namespace

const std::vector<CpuKernelEntry>& cpu_kernel_entries() {
  static const std::vector<CpuKernelEntry> entries = {
      {Family::standard, Pass::fwd, false, &cpu_standard_workspace_bytes, &refuse_standard, &cpu_standard_forward},
      {Family::fa1, Pass::fwd, true, &cpu_fa1_workspace_bytes, nullptr, &cpu_fa1_forward},
      {Family::fa2, Pass::fwd, true, &no_workspace, nullptr, &cpu_fa2_forward},
      {Family::fa2, Pass::bwd, true, &cpu_fa2_bwd_workspace_bytes, nullptr, &cpu_fa2_backward},
  };
  return entries;
}

}  // namespace fa
