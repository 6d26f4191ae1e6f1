"""Theano's old spelling of the GPU module, so the tutorial's scripts port unchanged.

``sandbox.cuda.basic_ops.gpu_from_host`` is :func:`coursekit.gpu_from_host`.
"""
from . import cuda  # noqa: F401
