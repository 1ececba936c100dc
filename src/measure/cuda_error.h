// cudaError_t as text and whether it leaves the context unusable, for host-compiled
// code that must not include CUDA headers (cuda_kernels.cpp). Defined in
// cuda_error.cu, or cuda_error.nocuda.cpp when built without CUDA.
#pragma once

namespace fa {

const char* cuda_error_string(int code);  // cudaGetErrorName + cudaGetErrorString
// True for errors after which every later CUDA call fails (illegal address, launch
// failure, ...): the sweep must stop instead of recording one more error row.
bool cuda_error_is_sticky(int code);

}  // namespace fa
