# FA2: dtype:head_dim:block_m:block_n:warps:stages. Every tile here compiles without
# register spills (-Xptxas -warn-spills); block_m / (16 * warps) m-tiles per warp.
# 128x64.w4 (hd128) and 128x128.w4 (hd64), flash-attention's own choices, spill
# here and are left out. Timings per tile: docs/PERF_NOTES.md.
fa_add_instances(FA_FAMILY_INSTANCES fa2 fa2/fa2_fwd.cuh fa::Fa2Kernel
  bf16:64:128:64:4:2   fp16:64:128:64:4:2
  bf16:64:128:64:4:3   fp16:64:128:64:4:3
  bf16:64:128:64:8:2   fp16:64:128:64:8:2
  bf16:128:128:32:4:2  fp16:128:128:32:4:2
  bf16:128:128:32:4:3  fp16:128:128:32:4:3
  bf16:128:128:64:8:2  fp16:128:128:64:8:2
  bf16:256:128:64:8:2  fp16:256:128:64:8:2
  bf16:256:64:32:4:2   fp16:256:64:32:4:2
  bf16:256:128:32:8:2  fp16:256:128:32:8:2)
