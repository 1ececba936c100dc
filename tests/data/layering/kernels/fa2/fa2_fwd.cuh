// Planted: one family includes another.
#pragma once
#include "common/attn_params.h"
#include "fa3/fa3_traits.cuh"
