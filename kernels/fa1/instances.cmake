# FA1 (Algorithm 1): dtype:head_dim:block_m:block_n:warps:stages. Stages is fixed by
# the loop order (K/V once per outer step, Q double-buffered) and recorded as 2.
# A wider block_n halves the float32 O round trips per key, FA1's HBM cost.
# 64x128.w4 (hd128): half the threads and shared memory of 128x128.w8, so two CTAs
# share an SM and one's O/l/m round trip overlaps the other's GEMMs.
# 64x128.w8 (hd256) and 64x256.w8 (hd128): two warps per 16-row group, each with half
# of S's columns and half of O's head dim, P through shared memory (fa1_fwd.cuh):
# B_c two or four times what fits with S and O in one warp's registers. 32x128.w8
# (hd256): four warps per row group, and half the rows, so shared memory also holds
# the next O_i, l_i, m_i (kPrefetchO): +6-11 % over the same tile without it.
# "*": the default per head_dim, measured fastest on an H200 with the paper-fwd
# sweep (docs/PERF_NOTES.md, FA1):
#   hd64  128x128.w8: block_n 128 halves the float32 O round trips
#   hd128 64x256.w8: split columns, B_c 256: 0.49-0.54x fa2 (64x128.w4: 0.45-0.54)
#   hd256 32x128.w8: split columns + O prefetch: 0.40-0.49x fa2 (128x32.w8: 0.13-0.17)
fa_add_instances(FA_FAMILY_INSTANCES fa1 fa1/fa1_fwd.cuh fa::Fa1Kernel
  bf16:64:128:64:8:2   fp16:64:128:64:8:2
  bf16:64:128:128:8:2* fp16:64:128:128:8:2*
  bf16:128:128:64:8:2  fp16:128:128:64:8:2
  bf16:128:128:128:8:2 fp16:128:128:128:8:2
  bf16:128:64:128:4:2  fp16:128:64:128:4:2
  bf16:128:64:256:8:2* fp16:128:64:256:8:2*
  bf16:256:128:32:8:2  fp16:256:128:32:8:2
  bf16:256:64:128:8:2  fp16:256:64:128:8:2
  bf16:256:32:128:8:2* fp16:256:32:128:8:2*)
# The backward, Algorithm 4 (fa1_bwd.cuh): block_m = Q rows per inner step,
# block_n = keys per CTA, stages = Q_i/dO_i/O_i buffers. Key-per-warp tiles (one
# warp per 16 keys: hd64 and hd128) keep P^T and dS^T in registers for dV and dK;
# with 128-row Q blocks and 64 keys, and at hd256, two warps share 16 keys,
# splitting the head dim of dK/dV, with P^T through shared memory; one stage
# where two do not fit. hd64 128x128.w8 is left out: its fp16 build spills.
fa_add_bwd_instances(FA_FAMILY_INSTANCES fa1 fa1/fa1_bwd.cuh fa::Fa1BwdKernel
  bf16:64:64:128:8:2   fp16:64:64:128:8:2
  bf16:64:128:64:8:2   fp16:64:128:64:8:2
  bf16:64:64:64:4:2    fp16:64:64:64:4:2
  bf16:128:64:128:8:2  fp16:128:64:128:8:2
  bf16:128:128:64:8:1  fp16:128:128:64:8:1
  bf16:256:64:64:8:1   fp16:256:64:64:8:1)
