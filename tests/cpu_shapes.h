// The shapes and tiles the CPU kernel tests, forward and backward, run over.
#pragma once
#include "core/types.h"

namespace fa::test {

inline AttnProblem shape(int b, int h, int hkv, int nq, int nk, int d, bool causal,
                         DType dt = DType::f32) {
  AttnProblem p;
  p.batch = b, p.heads = h, p.heads_kv = hkv, p.seqlen_q = nq, p.seqlen_k = nk, p.head_dim = d;
  p.causal = causal;
  p.dtype = dt;
  return p;
}

inline const AttnProblem kCpuShapes[] = {
    shape(1, 2, 2, 100, 100, 32, false),  // ragged against every tile
    shape(2, 2, 2, 77, 77, 16, true),
    shape(1, 2, 2, 40, 130, 16, true),    // seqlen_q < seqlen_k
    shape(1, 2, 2, 130, 40, 16, true),    // seqlen_q > seqlen_k: 90 rows see no key
    shape(1, 4, 2, 65, 33, 16, true),     // GQA
    shape(2, 4, 1, 33, 65, 8, false),     // MQA
    shape(1, 1, 1, 1, 1, 16, false),      // seqlen 1
    shape(1, 1, 1, 1, 50, 16, true),      // one query row sees every key
    shape(1, 1, 1, 50, 1, 16, true),      // only the last row sees the single key
};
inline const Tile kCpuTiles[] = {{16, 16, 0, 0}, {16, 64, 0, 0}, {64, 16, 0, 0}, {32, 128, 0, 0},
                                 {64, 64, 0, 0}, {128, 32, 0, 0}, {7, 5, 0, 0}};

}  // namespace fa::test
