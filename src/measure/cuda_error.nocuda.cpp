// Stands in for cuda_error.cu when built with FA_BENCH_CUDA=OFF (no GPU entries
// exist then, so these are never reached with a real error).
#include "measure/cuda_error.h"

namespace fa {

const char* cuda_error_string(int) { return "CUDA error (fa-bench built without CUDA)"; }
bool cuda_error_is_sticky(int) { return false; }

}  // namespace fa
