"""coursekit — a small, readable Theano, and a course on putting array work on a GPU.

Port a Theano script by changing its imports::

    import coursekit as theano
    import coursekit.tensor as T

The main entry points: :func:`shared`, :func:`function` (with ``In``/``Out``,
``updates`` and ``givens``), :func:`grad`, :data:`config`, and
:mod:`coursekit.printing` for looking at graphs.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import tensor  # noqa: F401  (import coursekit.tensor as T)
from . import rewriting  # noqa: F401  (registers the rewrites, and the cost stabilisation grad() uses)
from .compile import In, Mode, Out, SharedVariable, function, shared  # noqa: F401
from . import debugmode  # noqa: F401,E402  (registers mode="DebugMode")
from .config import config  # noqa: F401
from .graph import Apply, Constant, Op, Type, Variable  # noqa: F401
from .tensor.type import TensorType  # noqa: F401


def grad(cost, wrt, consider_constant=None, disconnected_inputs="raise", known_grads=None):
    """Symbolic gradient of a scalar ``cost`` with respect to ``wrt`` (see :mod:`coursekit.gradient`)."""
    from .gradient import grad as _grad

    return _grad(cost, wrt, consider_constant=consider_constant,
                 disconnected_inputs=disconnected_inputs, known_grads=known_grads)


def dot(x, y):
    """``theano.dot``: the same as ``coursekit.tensor.dot``."""
    return tensor.dot(x, y)


def pp(obj):
    """``theano.pp``: one-line infix text of a graph (see :func:`coursekit.printing.pp`)."""
    from .printing import pp as _pp

    return _pp(obj)


def scan(fn, sequences=None, outputs_info=None, non_sequences=None, n_steps=None, **kwargs):
    """``theano.scan``: a loop in the graph (see :func:`coursekit.scan_module.scan`)."""
    from .scan_module import scan as _scan

    return _scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_sequences,
                 n_steps=n_steps, **kwargs)


def gpu_from_host(x):
    """Make the graph end on the device: the function returns a device array (see lesson 3)."""
    from .devices.transfer import gpu_from_host as _gpu_from_host

    return _gpu_from_host(x)


def host_from_gpu(x):
    """Copy a device value to the host (placement usually inserts this for you)."""
    from .devices.transfer import host_from_gpu as _host_from_gpu

    return _host_from_gpu(x)


def __getattr__(name):
    # heavier submodules load on first use, keeping `import coursekit` fast
    import importlib

    if name in ("printing", "gradient", "profiling", "rewriting", "devices", "cuda", "sandbox", "debugmode",
                "course", "random", "scan_module"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'coursekit' has no attribute {name!r}")
