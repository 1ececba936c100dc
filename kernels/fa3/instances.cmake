# fa3 instantiations: dtype:head_dim:block_m:block_n:warps:stages.
# warps = 4 * (block_m / 64 + 1): one producer warpgroup plus one consumer
# warpgroup per 64 query rows. At least two tiles per head dim so --block can compare
# (docs/FA3.md says why these; PERF_NOTES.md "FA3" has what they and the
# candidates dropped -- 3 and 4 stages, 128x192, hd256 128x64 -- measured). hd256
# 128x128 has one K/V stage (what shared memory holds) and the serial block loop
# (Fa3Traits::kSerialBlocks); it runs up to 2048 tokens (registry/auto_tile.cpp).
# "*" marks the default per head_dim.
fa_add_instances(FA_FAMILY_INSTANCES fa3 fa3/fa3_fwd.cuh fa::Fa3Kernel
  bf16:64:192:128:16:2*  bf16:64:128:128:12:2
  fp16:64:192:128:16:2*  fp16:64:128:128:12:2
  bf16:128:128:128:12:2* bf16:128:128:176:12:2  bf16:128:128:160:12:2
  fp16:128:128:128:12:2* fp16:128:128:176:12:2  fp16:128:128:160:12:2
  bf16:256:128:80:12:2*  bf16:256:128:128:12:1
  fp16:256:128:80:12:2*  fp16:256:128:128:12:1)

# The FP8 forward (fa3_fp8_entry.cuh): e4m3 Q, K, V with descales, bf16 O, 2
# stages. hd128's default has three consumer warpgroups (192 query rows); its
# two-warpgroup 128x128 is kept for short causal rows (registry/auto_tile.cpp).
# fa3_fp8_fwd.cuh has the defaults, PERF_NOTES.md "FA3 FP8" the measurements.
fa_add_instances(FA_FAMILY_INSTANCES fa3 fa3/fa3_fp8_entry.cuh fa::Fa3Fp8Kernel
  e4m3:64:128:256:12:2*  e4m3:128:192:128:16:2*  e4m3:128:128:128:12:2  e4m3:256:128:128:12:2*)

# Planted fault for the same self-test: the e4m3 head_dim 128 forward with V's
# descale applied twice (fa3_fp8_fault.h). Not registered; built only with head_dim 128.
fa_add_planted_instances(FA_FAMILY_INSTANCES fa3 fa3/fa3_fp8_entry.cuh fa::Fa3Fp8Kernel fa::Fa3Fp8Fault e4m3 128
  v_descale_twice)

# The backward (fa3_bwd.cuh): block_m x block_n is Q rows x K/V rows per step;
# warps = 12, a producer warpgroup and two consumers (64 keys each; at head_dim
# 256 the same 64 keys, half of head_dim each); stages is the depth of the Q / dO
# ring. docs/FA3.md ("Backward") says why these tiles; a 3-stage hd128 tile measured
# 0.92-1.01 of the 2-stage one (docs/PERF_NOTES.md fa3-bwd-first-kernel) and was dropped.
fa_add_bwd_instances(FA_FAMILY_INSTANCES fa3 fa3/fa3_bwd.cuh fa::Fa3BwdKernel
  bf16:64:128:128:12:2
  fp16:64:128:128:12:2
  bf16:128:64:128:12:2
  fp16:128:64:128:12:2
  bf16:256:64:64:12:2
  fp16:256:64:64:12:2)

# Planted faults for `fa-check --self-test --backend cuda` (docs/CHECK.md): the
# default bf16 head_dim 128 backward tile once per fa::Fa3BwdFault but none
# (fa3_bwd_fault.h). Not registered; built only with head_dim 128.
fa_add_planted_bwd_instances(FA_FAMILY_INSTANCES fa3 fa3/fa3_bwd.cuh fa::Fa3BwdKernel fa::Fa3BwdFault bf16 128
  no_d_term gqa_not_summed causal_unmasked_recompute dq_unscaled dq_overwritten)
