// Clean: a family includes common/ and its own folder.
#pragma once
#include "common/attn_params.h"
#include "fa3/fa3_args.cuh"
