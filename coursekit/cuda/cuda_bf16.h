// Stand-in for the CUDA toolkit's cuda_bf16.h when a kernel is compiled for the
// coursekit CPU emulator: __nv_bfloat16 and its arithmetic come from ck_half.h.
#pragma once
#include "ck_half.h"
