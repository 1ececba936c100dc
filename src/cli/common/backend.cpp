#include "cli/common/backend.h"

#include <fmt/format.h>

#include "cli/common/exit_codes.h"
#include "core/errors.h"
#include "measure/cpu_executor.h"

namespace fa::cli {

std::unique_ptr<Executor> pick_executor(const std::string& program, const std::string& backend, int threads,
                                        int64_t cpu_mem_limit) {
  if (backend == "cpu") return make_cpu_executor(threads, cpu_mem_limit);
  if (backend != "auto" && backend != "cuda")
    throw UsageError(fmt::format("--backend: unknown '{}' (auto, cpu, cuda)", backend));
  std::string why;
  if (auto ex = make_cuda_executor(0, &why)) {
    if (backend == "auto") print_note(program, "backend: cuda (auto: a CUDA device is present)");
    return ex;
  }
  if (backend == "cuda") throw UsageError(fmt::format("--backend cuda: no CUDA back end here: {}", why));
  print_note(program, fmt::format("backend: cpu (auto: {})", why));
  return make_cpu_executor(threads, cpu_mem_limit);
}

}  // namespace fa::cli
