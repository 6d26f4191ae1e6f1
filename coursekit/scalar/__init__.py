"""What one element of an elementwise op does, and how it runs everywhere.

This package sits below :mod:`coursekit.tensor` (as Theano's and PyTensor's
``scalar`` do) and imports nothing above :mod:`coursekit.config`:

=====================  ===========================================================
``ops.py``             the op table: one :class:`ScalarOp` per function (NumPy impl,
                       derivative, C expression); ``get("exp")``, ``Cast``
``composite.py``       ``Composite``: a fused chain of scalar ops as one program
``cpu.py``             the CPU thunk's fast case (inputs the types sort out)
``numba_kernels.py``   a Composite as one numba loop (optional, ``cpu_kernels='numba'``)
``numba_math.py``      vectorisable float32 exp/log/log1p for those loops
``cuda_codegen.py``    a scalar op or Composite as CUDA C (one kernel on a GPU)
=====================  ===========================================================

The tensor op that applies a scalar op to arrays is
:class:`coursekit.tensor.elemwise.Elemwise`; the rewrite that groups nodes into
a Composite is :mod:`coursekit.rewriting.fusion`.

Following ``T.exp(x)`` from the graph to the machine: ``tensor/math.py`` makes
``Elemwise(ops.get("exp"))``, whose row here says ``np.exp``, its derivative
and ``exp({0})``.  Fusion may fold it into a ``Composite`` (``composite.py``).
On the CPU, ``Elemwise.make_thunk`` asks ``cpu.py`` for the thunk that calls
the impl (or the numba loop of ``numba_kernels.py``); on a GPU, the device asks
``cuda_codegen.py`` for one ``cupy.ElementwiseKernel`` built from the C.
"""
from __future__ import annotations

from .ops import Cast, ScalarOp, all_names, c_type, get, register  # noqa: F401
from .dtypes import upcast  # noqa: F401  (Theano's theano.scalar.upcast)
