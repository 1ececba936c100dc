// Clean: kernels include core.
#pragma once
#include "core/errors.h"
