// A clean core header.
#pragma once
#include <cstdint>
