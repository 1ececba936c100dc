// fa-check --self-test: a check that has never caught a bug proves nothing.
// A clean kernel and one copy of it per planted fault run over the suite;
// every fault must fail at least one case, the clean kernels none.
//  - cpu back end: cpu.fa2.64x64 (CpuFault in kernels/cpu/cpu_kernels.h) and
//    cpu.fa2.bwd.64x64 (CpuBwdFault in kernels/cpu/fa2_bwd.h);
//  - cuda back end: the planted GPU kernels this build has (registry/cuda_kernels.h):
//    fa3's bf16 head_dim 128 backward at its default tile (Fa3BwdFault in
//    kernels/fa3/fa3_bwd_fault.h).
#pragma once
#include <string>
#include <vector>

#include "cli/fa_check/check_run.h"

namespace fa::check {

// The back end's clean kernels and faulty copies, for resolve_kernels:
// "cpu.fa2.64x64,cpu.fa2.64x64+no_rescale,...,cpu.fa2.bwd.64x64,...". Throws
// UsageError where this build has none for `backend` (cuda without fa3 at head_dim 128).
std::string self_test_selection(Backend backend);
// Prints which case caught which fault (and what escaped); true iff all caught
// and the clean kernels passed everything.
bool report_self_test(const std::vector<CheckRow>&, Backend backend);

}  // namespace fa::check
