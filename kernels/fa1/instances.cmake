# FA1 (Algorithm 1): dtype:head_dim:block_m:block_n:warps:stages. Stages is fixed by
# the loop order (K/V once per outer step, Q double-buffered) and recorded as 2.
# A wider block_n halves the float32 O round trips per key, FA1's HBM cost.
fa_add_instances(FA_FAMILY_INSTANCES fa1 fa1/fa1_fwd.cuh fa::Fa1Kernel
  bf16:64:128:64:8:2   fp16:64:128:64:8:2
  bf16:64:128:128:8:2  fp16:64:128:128:8:2
  bf16:128:128:64:8:2  fp16:128:128:64:8:2
  bf16:128:128:128:8:2 fp16:128:128:128:8:2
  bf16:256:128:32:8:2  fp16:256:128:32:8:2)
