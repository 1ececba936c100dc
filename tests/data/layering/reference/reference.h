// Planted: the reference includes the kernels.
#pragma once
#include "core/types.h"
#include "common/attn_params.h"
