// A thin RAII layer over cuDNN's backend (graph) API: a descriptor that is
// destroyed with its owner, typed attribute setters, and cuDNN statuses turned
// into messages that name the call. Nothing here knows about attention.
#pragma once
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fa::cudnn {

// A failed cuDNN call: `what` names the call and carries cuDNN's own message.
struct Failure {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::string what;
};

// "<call>: <status name> (<cuDNN's last error message>)".
std::string describe(cudnnStatus_t status, const char* call);

class Desc {
 public:
  Desc() = default;
  explicit Desc(cudnnBackendDescriptorType_t type);  // throws Failure
  ~Desc() { reset(); }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

  // Each setter throws Failure naming `what` (the attribute) on error.
  Desc& set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n,
            const void* values, const char* what);
  Desc& set_i64(cudnnBackendAttributeName_t a, int64_t v, const char* what) {
    return set(a, CUDNN_TYPE_INT64, 1, &v, what);
  }
  Desc& set_i64s(cudnnBackendAttributeName_t a, const std::vector<int64_t>& v, const char* what) {
    return set(a, CUDNN_TYPE_INT64, int64_t(v.size()), v.data(), what);
  }
  Desc& set_bool(cudnnBackendAttributeName_t a, bool v, const char* what) {
    return set(a, CUDNN_TYPE_BOOLEAN, 1, &v, what);
  }
  Desc& set_dtype(cudnnBackendAttributeName_t a, cudnnDataType_t v, const char* what) {
    return set(a, CUDNN_TYPE_DATA_TYPE, 1, &v, what);
  }
  Desc& set_desc(cudnnBackendAttributeName_t a, const Desc& v, const char* what) {
    cudnnBackendDescriptor_t raw = v.get();
    return set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
  }
  Desc& finalize(const char* what);  // throws Failure
  // Finalize without throwing; the status (and message, if any) for callers
  // that try several candidates (engine configs).
  cudnnStatus_t try_finalize(std::string* message);

 private:
  void reset();
  cudnnBackendDescriptor_t d_ = nullptr;
};

}  // namespace fa::cudnn
