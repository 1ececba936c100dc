// Clean.
#pragma once
#include "core/errors.h"
