// The timing statistics and the stopping rule (the value types are core/timing.h).
#pragma once
#include <string>
#include <vector>

#include "core/timing.h"

namespace fa {

TimingSummary summarize(std::vector<double> samples_ms, std::string method);
// The stopping rule: enough samples and noise under target, or out of budget.
bool timing_done(const std::vector<double>& samples_ms, double elapsed_s, const TimingOptions&);

}  // namespace fa
