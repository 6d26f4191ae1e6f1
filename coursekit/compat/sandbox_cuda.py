"""``theano.sandbox.cuda`` under the alias: coursekit's PyCUDA-op support, and Theano's "is the old CUDA back
end on?" flag.

Libraries read ``theano.sandbox.cuda.cuda_enabled`` before they import layers built on that back end's own
kernels (cuda-convnet, ``GpuCorrMM``).  coursekit runs GPU work its own way, so the answer is ``False``
on every device, and those libraries fall back to their portable layers (the ones that use ``conv2d``).
"""
from __future__ import annotations

from ..sandbox.cuda import *  # noqa: F401,F403
from ..sandbox.cuda import CudaNdarray, basic_ops  # noqa: F401

cuda_enabled = False
