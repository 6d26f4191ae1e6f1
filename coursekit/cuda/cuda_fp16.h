// Stand-in for the CUDA toolkit's cuda_fp16.h when a kernel is compiled for the
// coursekit CPU emulator: __half, __half2 and their arithmetic come from ck_half.h.
#pragma once
#include "ck_half.h"
