"""Where each ``theano.*`` module name leads in coursekit.

Most names map by prefix (``theano.tensor.nnet`` is ``coursekit.tensor.nnet``).  The table below lists
the Theano paths whose coursekit home has another name: Theano kept its graph classes in ``theano.gof``,
its pooling in ``theano.tensor.signal.pool`` and its old GPU back end in ``theano.sandbox.cuda``.  The
modules that exist only because Theano programs import them by name live here, in ``coursekit.theano``
(``theano`` itself is :mod:`coursekit.theano.root`); the library never imports them.
"""
from __future__ import annotations

ALIAS_ROOT = "theano"
REAL_ROOT = "coursekit"
HERE = "coursekit.theano"

# Theano module path -> coursekit module path (for names that moved; the rest map by prefix)
MOVED = {
    "theano": HERE + ".root",
    "theano.gof.graph": HERE + ".gof",
    "theano.gof.op": HERE + ".gof",
    "theano.gof.utils": HERE + ".gof",
    "theano.gof.fg": "coursekit.fgraph",
    "theano.gof.opt": HERE + ".gof",
    "theano.tensor.opt": HERE + ".tensor_opt",
    "theano.compile.ops": "coursekit.compile.viewop",
    "theano.sandbox.gpuarray": HERE + ".gpuarray",
    "theano.scan_module.scan_utils": HERE + ".scan_utils",
    "theano.tensor.basic": "coursekit.tensor",
    "theano.tensor.var": "coursekit.tensor.var",
    "theano.tensor.sharedvar": "coursekit.compile.sharedvalue",
    "theano.compile.sharedvalue": "coursekit.compile.sharedvalue",
    "theano.tensor.shared_randomstreams": HERE + ".shared_randomstreams",
    "theano.tensor.signal.downsample": HERE + ".downsample",
    "theano.tensor.nnet.nnet": "coursekit.tensor.nnet",
    "theano.tensor.nnet.sigm": "coursekit.tensor.nnet",
}

# top-level Theano packages that only the alias has: theano.X.y is coursekit.theano.X.y
_ALIAS_ONLY = ("gof", "gpuarray", "sandbox", "misc", "compat")


def real_name(alias):
    """The coursekit module a ``theano...`` name stands for (``None`` for names outside ``theano``)."""
    if alias != ALIAS_ROOT and not alias.startswith(ALIAS_ROOT + "."):
        return None
    if alias in MOVED:
        return MOVED[alias]
    if alias.split(".")[1] in _ALIAS_ONLY:
        return HERE + alias[len(ALIAS_ROOT):]
    return REAL_ROOT + alias[len(ALIAS_ROOT):]


def alias_name(real):
    """The ``theano...`` name a coursekit module is shown under (the inverse of :func:`real_name`)."""
    plain = ALIAS_ROOT + real[len(HERE if real.startswith(HERE + ".") else REAL_ROOT):]
    if real_name(plain) == real:
        return plain
    return next((alias for alias, target in MOVED.items() if target == real), plain)
