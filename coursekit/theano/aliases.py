"""Where each ``theano.*`` module name leads in coursekit.

Most names map by prefix (``theano.tensor.nnet`` is ``coursekit.tensor.nnet``).  The table below lists
the Theano paths whose coursekit home has another name: Theano kept its graph classes in ``theano.gof``,
its pooling in ``theano.tensor.signal.pool`` and its old GPU back end in ``theano.sandbox.cuda``.
"""
from __future__ import annotations

ALIAS_ROOT = "theano"
REAL_ROOT = "coursekit"

# Theano module path -> coursekit module path (for names that moved; the rest map by prefix)
MOVED = {
    "theano": "coursekit.compat.root",
    "theano.gradient": "coursekit.compat.gradient",
    "theano.gof": "coursekit.compat.gof",
    "theano.gpuarray": "coursekit.compat.gpuarray",
    "theano.sandbox.gpuarray": "coursekit.compat.gpuarray",
    "theano.scan_module.scan_utils": "coursekit.compat.scan_utils",
    "theano.gof.graph": "coursekit.compat.gof",
    "theano.gof.op": "coursekit.compat.gof",
    "theano.gof.utils": "coursekit.compat.gof",
    "theano.gof.fg": "coursekit.fgraph",
    "theano.tensor.basic": "coursekit.tensor",
    "theano.tensor.var": "coursekit.tensor.var",
    "theano.tensor.sharedvar": "coursekit.compile.sharedvalue",
    "theano.compile.sharedvalue": "coursekit.compile.sharedvalue",
    "theano.tensor.shared_randomstreams": "coursekit.tensor.shared_randomstreams",
    "theano.sandbox.rng_mrg": "coursekit.sandbox.rng_mrg",
    "theano.sandbox.cuda": "coursekit.compat.sandbox_cuda",
    "theano.tensor.nnet.nnet": "coursekit.tensor.nnet",
    "theano.tensor.nnet.sigm": "coursekit.tensor.nnet",
}


_ROOT_ONLY = ("gof", "gpuarray")  # top-level Theano packages that live under coursekit.compat


def real_name(alias):
    """The coursekit module a ``theano...`` name stands for (``None`` for names outside ``theano``)."""
    if alias != ALIAS_ROOT and not alias.startswith(ALIAS_ROOT + "."):
        return None
    if alias in MOVED:
        return MOVED[alias]
    if alias.startswith(ALIAS_ROOT + ".") and alias.split(".")[1] in _ROOT_ONLY:
        return "coursekit.compat." + alias[len(ALIAS_ROOT) + 1:]
    return REAL_ROOT + alias[len(ALIAS_ROOT):]


def alias_name(real):
    """The ``theano...`` name a coursekit module is shown under (the inverse of :func:`real_name`)."""
    plain = ALIAS_ROOT + real[len(REAL_ROOT):]
    if not real.startswith(REAL_ROOT + ".compat"):
        return plain
    return next((alias for alias, target in MOVED.items() if target == real), plain)
