// Stand-in for the CUDA toolkit's header when a kernel is compiled for the
// coursekit CPU emulator: everything it would provide comes from ck_prelude.h.
#pragma once
