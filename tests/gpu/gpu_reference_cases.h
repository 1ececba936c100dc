// What the GPU reference tests share: a CUDA executor or a skip, and the
// shapes that stress the mask and the head mapping.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/types.h"
#include "measure/executor.h"

namespace fa::gpu_reference_cases {

#define SKIP_WITHOUT_CUDA(ex)                                    \
  std::string why_;                                              \
  auto ex = make_cuda_executor(0, &why_);                        \
  if (!ex) GTEST_SKIP() << "no CUDA executor: " << why_

inline AttnProblem shape(int b, int h, int hk, int nq, int nk, int d, bool causal, DType t = DType::bf16) {
  AttnProblem p;
  p.batch = b;
  p.heads = h;
  p.heads_kv = hk;
  p.seqlen_q = nq;
  p.seqlen_k = nk;
  p.head_dim = d;
  p.causal = causal;
  p.dtype = t;
  return p;
}

// Causal square, GQA, MQA, ragged both ways (q300 k100 causal: rows 0-199 see
// no key), one query row, one key, fp16, head_dim 256, and a longer row set.
inline std::vector<AttnProblem> shapes() {
  return {shape(2, 4, 2, 300, 300, 64, true),  shape(1, 8, 2, 200, 200, 128, false),
          shape(1, 4, 1, 257, 257, 64, true),  shape(1, 2, 2, 100, 300, 64, true),
          shape(1, 2, 1, 300, 100, 128, true), shape(1, 2, 2, 1, 333, 64, true, DType::f16),
          shape(1, 2, 2, 190, 1, 64, true),    shape(1, 2, 2, 513, 513, 256, true, DType::f16),
          shape(1, 4, 4, 2048, 2048, 128, true)};
}

}  // namespace fa::gpu_reference_cases
