# cuDNN's fused attention (flash) forward and backward through its graph API:
# one entry per pass and dtype (e4m3: forward only), any head_dim (cuDNN
# decides), no tile. Needs cuDNN found at configure time (FA_CUDNN_LIB);
# kernels/cudnn/*.cu hold the graph building.
if(FA_CUDNN_LIB AND FA_CUDNN_INCLUDE)
  fa_add_instances(FA_FAMILY_INSTANCES cudnn cudnn/cudnn_sdpa.cuh fa::CudnnSdpa
    bf16:0:0:0:0:0 fp16:0:0:0:0:0)
  fa_add_bwd_instances(FA_FAMILY_INSTANCES cudnn cudnn/cudnn_sdpa.cuh fa::CudnnSdpaBwd
    bf16:0:0:0:0:0 fp16:0:0:0:0:0)
  # The FP8 forward (cudnn_sdpa_fp8.cuh): e4m3 Q, K, V with one descale each,
  # e4m3 O with the caller's scale.
  fa_add_instances(FA_FAMILY_INSTANCES cudnn cudnn/cudnn_sdpa_fp8.cuh fa::CudnnSdpaFp8
    e4m3:0:0:0:0:0)
else()
  message(STATUS "cudnn family: cuDNN not found, not built")
endif()
