// Engine choice for a finalized operation graph: cuDNN's heuristics (mode A,
// then the fallback list), the first engine configuration that finalizes.
#pragma once
#include <cstdint>

#include "cudnn/backend.h"

namespace fa::cudnn {

struct EngineChoice {
  Desc plan;                      // finalized execution plan
  int64_t engine_index = -1;      // cuDNN's global engine index (for logs)
  int64_t workspace_bytes = 0;    // what cudnnBackendExecute needs
  bool nondeterministic = false;  // the engine carries CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
};

// Throws Failure with the best-ranked engine's reason when none runs `graph`.
// `deterministic_only` skips engines that carry the nondeterministic note.
EngineChoice choose_engine(cudnnHandle_t handle, const Desc& graph, bool deterministic_only);

}  // namespace fa::cudnn
