// Clean: measure includes core and kernels.
#pragma once
#include "core/errors.h"
#include "common/attn_params.h"
