// Whether the code being compiled may use sm_90a-only instructions (wgmma,
// setmaxnreg). The host pass and any extra architecture (e.g. sm_80 from
// FA_BENCH_EXTRA_ARCHS) see FA_SM90A_ENABLED == 0 and compile the kernels to an
// empty body; the launcher then refuses to run on a device that is not sm_90.
#pragma once

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FA_SM90A_ENABLED 1
#else
#define FA_SM90A_ENABLED 0
#endif
