// Which pass a cuDNN attention plan runs. No cuDNN header here: the entry
// points (cudnn_sdpa.h) stay light for the generated instantiations.
#pragma once

namespace fa::cudnn {

enum class SdpaPass : int { fwd, bwd };

}  // namespace fa::cudnn
