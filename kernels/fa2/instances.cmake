# FA2: dtype:head_dim:block_m:block_n:warps:stages; block_m / (16 * warps) m-tiles
# per warp. Every tile compiles without spills in its mainloop. One exception to
# "no spills at all" (-Xptxas -warn-spills): hd128 128x64.w4, flash-attention's own
# tile there, uses 255 registers and spills 16 bytes; in its SASS the mainloop's
# only local-memory access is one LDL.64 (the K/V pointers, reloaded in the
# prefetch branch) per K/V block, so it stays. 128x128.w4 (hd64) spills in the
# loop and is left out. Timings per tile: docs/PERF_NOTES.md.
# "*": the default per head_dim, measured fastest on an H200 with the paper-fwd
# sweep (docs/PERF_NOTES.md, FA2):
#   hd64  128x64.w4.s2: 1.04-1.08x torch flash, seqlen 1k-16k
#   hd128 128x64.w4.s2: 1.02-1.07x torch flash (128x32.w4: 0.97-1.01)
#   hd256 128x64.w8.s2: 8 warps, one m-tile each
fa_add_instances(FA_FAMILY_INSTANCES fa2 fa2/fa2_fwd.cuh fa::Fa2Kernel
  bf16:64:128:64:4:2*  fp16:64:128:64:4:2*
  bf16:64:128:64:4:3   fp16:64:128:64:4:3
  bf16:64:128:64:8:2   fp16:64:128:64:8:2
  bf16:128:128:32:4:2  fp16:128:128:32:4:2
  bf16:128:128:32:4:3  fp16:128:128:32:4:3
  bf16:128:128:64:4:2* fp16:128:128:64:4:2*
  bf16:128:128:64:8:2  fp16:128:128:64:8:2
  bf16:256:128:64:8:2* fp16:256:128:64:8:2*
  bf16:256:64:32:4:2   fp16:256:64:32:4:2
  bf16:256:128:32:8:2  fp16:256:128:32:8:2)

# FA2 backward (fa2_bwd.cuh): block_m = queries per inner step, block_n = keys per CTA,
# stages = depth of the Q/dO pipeline. "*": the default, measured fastest on the H200
# (docs/PERF_NOTES.md fa2-bwd-fewer-smem-reads: hd64 64x128.w4 1.15-1.22x PyTorch's
# flash backward, hd128 64x128.w8 1.07-1.11x, from seqlen 2048). Warp layouts (docs/FA2_BWD.md): P^T in registers with 16 keys
# per warp (the 8-warp tiles at hd64, hd128 128x128, hd256) or 32 (hd64 64x128.w4,
# two CTAs per SM); P^T through shared memory with 32 keys per pair of warps, each
# warp half of the head dim (hd128 64x128.w8). None spills (no local memory in any of
# its kernels). Main kernel, registers with atomic dQ / deterministic, and dynamic
# shared memory (ptxas):
#   hd64   64x128.w4.s2  249 / 253        81 KiB      hd64  128x128.w8.s2  230 / 212 regs  130 KiB
#   hd128  64x128.w8.s2  247 / 249       161 KiB      hd128 128x128.w8.s2  252 / 250       226 KiB
#   hd256   64x64.w4.s2  255 / 253       201 KiB
# (one CTA per SM, two for the 4-warp hd64 tiles: registers or shared memory). The
# deterministic dQ kernel: 161 / 217 / 246 regs and 48 / 96 / 128 KiB at hd 64 / 128 / 256.
fa_add_bwd_instances(FA_FAMILY_INSTANCES fa2 fa2/fa2_bwd.cuh fa::Fa2BwdKernel
  bf16:64:64:128:4:2*  fp16:64:64:128:4:2*
  bf16:64:128:128:8:2  fp16:64:128:128:8:2
  bf16:128:64:128:8:2* fp16:128:64:128:8:2*
  bf16:128:128:128:8:2 fp16:128:128:128:8:2
  bf16:256:64:64:4:2   fp16:256:64:64:4:2)
