// fa-check --self-test: a check that has never caught a bug proves nothing.
// The clean cpu.fa2.64x64 and one copy per planted fault (kernels/cpu/cpu_kernels.h)
// run over the suite; every fault must fail at least one case, the clean
// kernel none.
#pragma once
#include <string>
#include <vector>

#include "cli/fa_check/check_run.h"

namespace fa::check {

// "cpu.fa2.64x64,cpu.fa2.64x64+no_rescale,...": for resolve_kernels.
std::string self_test_selection();
// Prints which case caught which fault (and what escaped); true iff all caught
// and the clean kernel passed everything.
bool report_self_test(const std::vector<CheckRow>&);

}  // namespace fa::check
