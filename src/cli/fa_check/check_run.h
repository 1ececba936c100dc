// Runs kernels over check cases through the sweep runner (validate-only), and
// formats the command line that replays one failing row.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "cli/fa_check/suite.h"
#include "core/result.h"
#include "measure/executor.h"
#include "registry/kernel.h"

namespace fa::check {

// The kernels a --kernels selection names on one back end. Besides the
// registry's selection syntax, "cpu.fa2.<tile>+<fault>" and
// "cpu.fa2.bwd.<tile>+<fault>" build a cpu.fa2 variant with a planted fault
// (kernels/cpu/cpu_kernels.h, kernels/cpu/fa2_bwd.h), and
// "fa3.bwd.bf16.hd128.<tile>+<fault>" the planted fa3 backward of the default
// tile (kernels/fa3/fa3_bwd_fault.h, in builds with fa3 at head_dim 128): never
// registered, so they only exist where fa-check is asked for them (self-test,
// replaying a self-test row). A faulty variant of the other back end, an
// unknown fault or one this build lacks is a UsageError.
struct KernelSet {
  std::vector<const KernelVariant*> kernels;
  std::deque<KernelVariant> owned;  // the faulty variants
};
KernelSet resolve_kernels(const std::string& selection, Backend, const Registry&);
// The same checks of the faulty entries alone, before any back end is chosen.
void check_faulty_entries(const std::string& selection, const Registry&);

struct CheckRow {
  Result result;  // errors filled, no timing; result.distribution names the inputs
  Distribution distribution() const { return result.distribution.value_or(Distribution::normal); }
};

struct CheckSettings {
  uint64_t seed = 0;
  int64_t max_check_rows = 2048;  // full comparison up to this seqlen_q, sampled rows beyond
  // --max-check-rows given: the cuda back end then samples too (by default it
  // checks every row and column, sweep/runner.h check_limit).
  bool max_check_rows_set = false;
  bool exact_check = false;       // every row, whatever max_check_rows says
  int threads = 0;
};

// One case under one distribution (e4m3 inputs quantized as `fp8` says): every kernel of `kernels` whose pass is
// among `passes` and that supports the shape (a backward: with its forward
// partner) gives a row (to on_row); returns how many did not support it.
// A stop request (Ctrl-C, --timeout) ends it with fa::Stopped.
// Kernels are grouped by pass, and by block_m (a backward: and block_n) when rows
// or columns are sampled, so what is compared does not depend on which other
// kernels ran (a replay of one kernel checks the same rows and columns).
size_t run_case(const AttnProblem&, const std::vector<Pass>& passes, Distribution, const Fp8Settings& fp8,
                const std::vector<const KernelVariant*>&, const CheckSettings&, Executor&,
                const std::function<void(const CheckRow&)>& on_row);

// "fa-check --backend cpu --kernels K --case '...' --distribution D --seed S"
// (+ --max-check-rows when not the default, + an e4m3 row's FP8 settings when
// not the default): reruns exactly this row.
std::string replay_command(const std::string& program, const CheckRow&, const CheckSettings&,
                           int64_t default_max_check_rows);

}  // namespace fa::check
