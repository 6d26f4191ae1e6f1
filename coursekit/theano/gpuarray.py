"""``theano.gpuarray`` (and ``theano.sandbox.gpuarray``): Theano's libgpuarray back end, which coursekit is not.

coursekit puts work on a GPU its own way (``device=gpu``: CuPy, or the simulated GPU), so the libgpuarray
back end is never active and cuDNN is never present.  Programs ask exactly these two questions before
they import GPU-only layers (Lasagne's ``dnn`` layers, its tests' backend check); the answers are true.
"""
from __future__ import annotations

pygpu_activated = False


class dnn:  # noqa: N801 - Theano's module name, reached as an attribute
    """``theano.gpuarray.dnn``: cuDNN is not available through coursekit."""

    @staticmethod
    def dnn_present():
        return False

    @staticmethod
    def dnn_available(context_name=None):
        return False
