// Planted: core includes a src/ folder.
#pragma once
#include "core/errors.h"
#include "measure/timing.h"
