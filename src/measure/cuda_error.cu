#include "measure/cuda_error.h"

#include <cuda_runtime.h>

#include <string>

namespace fa {

const char* cuda_error_string(int code) {
  // Formatted once per code and kept: callers hold the pointer in exception text.
  thread_local std::string text;
  const auto e = static_cast<cudaError_t>(code);
  text = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  return text.c_str();
}

bool cuda_error_is_sticky(int code) {
  switch (static_cast<cudaError_t>(code)) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

}  // namespace fa
