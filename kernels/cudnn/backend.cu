// Host-only code: compiled by nvcc only because the family folder's glob takes *.cu.
#if defined(FA_BENCH_HAVE_CUDNN)
#include "cudnn/backend.h"

namespace fa::cudnn {

std::string describe(cudnnStatus_t status, const char* call) {
  std::string s = std::string(call) + ": " + cudnnGetErrorString(status);
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof(last));  // cuDNN's detail for the last failure on this thread
  if (last[0] != '\0') s += std::string(" (") + last + ")";
  return s;
}

Desc::Desc(cudnnBackendDescriptorType_t type) {
  cudnnStatus_t st = cudnnBackendCreateDescriptor(type, &d_);
  if (st != CUDNN_STATUS_SUCCESS) {
    d_ = nullptr;
    throw Failure{st, describe(st, "cudnnBackendCreateDescriptor")};
  }
}

void Desc::reset() {
  if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  d_ = nullptr;
}

Desc& Desc::set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n,
                const void* values, const char* what) {
  cudnnStatus_t st = cudnnBackendSetAttribute(d_, a, t, n, values);
  if (st != CUDNN_STATUS_SUCCESS)
    throw Failure{st, describe(st, (std::string("cudnnBackendSetAttribute ") + what).c_str())};
  return *this;
}

Desc& Desc::finalize(const char* what) {
  cudnnStatus_t st = cudnnBackendFinalize(d_);
  if (st != CUDNN_STATUS_SUCCESS)
    throw Failure{st, describe(st, (std::string("cudnnBackendFinalize ") + what).c_str())};
  return *this;
}

cudnnStatus_t Desc::try_finalize(std::string* message) {
  cudnnStatus_t st = cudnnBackendFinalize(d_);
  if (st != CUDNN_STATUS_SUCCESS && message != nullptr) *message = describe(st, "cudnnBackendFinalize");
  return st;
}

}  // namespace fa::cudnn
#endif  // FA_BENCH_HAVE_CUDNN
