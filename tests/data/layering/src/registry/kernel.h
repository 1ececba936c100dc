// Clean: registry includes measure.
#pragma once
#include "measure/timing.h"
