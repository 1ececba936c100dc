// fa-check --self-test: a check that has never caught a bug proves nothing.
// The clean cpu.fa2.64x64 and cpu.fa2.bwd.64x64 and one copy of each per planted
// fault (CpuFault in kernels/cpu/cpu_kernels.h, CpuBwdFault in kernels/cpu/fa2_bwd.h)
// run over the suite; every fault must fail at least one case, the clean
// kernels none.
#pragma once
#include <string>
#include <vector>

#include "cli/fa_check/check_run.h"

namespace fa::check {

// "cpu.fa2.64x64,cpu.fa2.64x64+no_rescale,...,cpu.fa2.bwd.64x64,...": for resolve_kernels.
std::string self_test_selection();
// Prints which case caught which fault (and what escaped); true iff all caught
// and the clean kernels passed everything.
bool report_self_test(const std::vector<CheckRow>&);

}  // namespace fa::check
