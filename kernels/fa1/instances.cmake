# FA1 (Algorithm 1): dtype:head_dim:block_m:block_n:warps:stages. Stages is fixed by
# the loop order (K/V once per outer step, Q double-buffered) and recorded as 2.
fa_add_instances(FA_FAMILY_INSTANCES fa1 fa1/fa1_fwd.cuh fa::Fa1Kernel
  bf16:64:128:64:8:2  fp16:64:128:64:8:2
  bf16:128:128:64:8:2 fp16:128:128:64:8:2
  bf16:128:64:64:4:2  fp16:128:64:64:4:2
  bf16:256:64:32:4:2  fp16:256:64:32:4:2)
