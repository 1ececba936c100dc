# Standard attention: cuBLAS + a softmax kernel, any head_dim (0), no tile.
fa_add_instances(FA_FAMILY_INSTANCES standard standard/standard.cuh fa::StandardKernel
  bf16:0:0:0:0:0 fp16:0:0:0:0:0)
# The backward (standard_bwd.cuh): cuBLAS + two row kernels, any head_dim, no tile.
fa_add_bwd_instances(FA_FAMILY_INSTANCES standard standard/standard_bwd.cuh fa::StandardBwdKernel
  bf16:0:0:0:0:0 fp16:0:0:0:0:0)
