"""Sparse matrices (Theano's ``theano.sparse``), stored as ``scipy.sparse`` CSR and CSC matrices.

::

    x = sparse.csc_matrix("x", dtype="float32")
    y = sparse.structured_dot(x, W)          # sparse @ dense -> dense, with a structured gradient
    f = coursekit.function([x], y)
    f(scipy.sparse.csc_matrix(array))

``type.py`` has the type and the constructors; ``basic.py`` the ops: ``dense_from_sparse``,
``csr_from_dense``/``csc_from_dense``, ``csm_properties`` and ``CSR``/``CSC`` (to take a matrix apart and
build one), ``transpose``, ``structured_add``, ``structured_dot``, ``dot``, ``neg``/``add``/``mul``.  They run
on the host with SciPy: on a GPU device they stay on the host (no GPU twin), and their dense inputs and
outputs cross as any host op's do.
"""
from .basic import *  # noqa: F401,F403
from .basic import __all__ as _ops
from .type import *  # noqa: F401,F403
from .type import __all__ as _types

__all__ = _types + _ops
