// CUDA's cooperative groups, emulated (sdfg_emulation/cooperative_groups.h).
#pragma once
#include "sdfg_emulation/cooperative_groups.h"
