// Planted: a folder without a layer rule.
#pragma once
#include "core/errors.h"
