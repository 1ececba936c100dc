// Planted: measure includes registry, which includes measure.
#pragma once
#include "measure/timing.h"
#include "registry/kernel.h"
