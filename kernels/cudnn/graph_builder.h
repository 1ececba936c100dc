// Builds a cuDNN backend operation graph one operation at a time: tensors,
// matmuls, pointwise ops, reductions and reshapes, each finalized as it is
// added. Knows the backend API, nothing about attention.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "cudnn/backend.h"

namespace fa::cudnn {

// Tensors that override a matmul's M, N or K per batch (nullptr: none).
struct GemmOverride {
  const Desc* m = nullptr;
  const Desc* n = nullptr;
  const Desc* k = nullptr;
};

class GraphBuilder {
 public:
  // Descriptors go to `keep`, which must outlive the finalized graph and plan.
  explicit GraphBuilder(std::deque<Desc>& keep) : keep_(keep) {}

  // A tensor descriptor; `uid` 0 allocates a virtual (on-chip) tensor id.
  // Non-virtual uids are recorded: they are the keys of the variant pack.
  const Desc& tensor(int64_t uid, cudnnDataType_t dt, std::vector<int64_t> dims, std::vector<int64_t> strides,
                     bool by_value = false);
  // A by-value scalar, broadcast against 4-D operands.
  const Desc& scalar(int64_t uid, cudnnDataType_t dt) {
    return tensor(uid, dt, {1, 1, 1, 1}, {1, 1, 1, 1}, /*by_value=*/true);
  }
  // A virtual tensor.
  const Desc& virt(cudnnDataType_t dt, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
    return tensor(0, dt, dims, strides);
  }

  // c = a b, float32 accumulation, batched over the leading dims.
  void matmul(const Desc& a, const Desc& b, const Desc& c, GemmOverride override_by = {});
  // y = mode(x[, b[, t]]). `axis` >= 0 only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const Desc& x, const Desc* b, const Desc* t,
                 const Desc& y, int64_t axis = -1);
  void reduction(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y);
  // y views x's elements with other dims/strides (here: a transpose).
  void reshape(const Desc& x, const Desc& y);

  Desc finalize_graph(cudnnHandle_t handle);
  const std::vector<int64_t>& uids() const { return uids_; }

 private:
  const Desc& store(Desc d) {
    keep_.push_back(std::move(d));
    return keep_.back();
  }
  void add_op(Desc op) { ops_.push_back(store(std::move(op)).get()); }

  std::deque<Desc>& keep_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::vector<int64_t> uids_;
  int64_t next_virtual_ = 1000;
};

}  // namespace fa::cudnn
