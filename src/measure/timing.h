// The timing statistics and the stopping rule (the value types are core/timing.h).
#pragma once
#include <string>
#include <vector>

#include "core/timing.h"

namespace fa {

TimingSummary summarize(std::vector<double> samples_ms, std::string method);
// The stopping rule: enough samples and noise under target, or out of budget.
// Throws fa::Stopped (core/stop.h) when a stop was requested: the row is abandoned.
bool timing_done(const std::vector<double>& samples_ms, double elapsed_s, const TimingOptions&);

}  // namespace fa
