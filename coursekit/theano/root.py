"""``theano`` itself under the alias: coursekit's top level, plus Theano's names the course never needed.

Everything ``import coursekit`` offers is here (read through to :mod:`coursekit`); this module adds
``theano.clone``, ``theano.Param`` (Theano 0.7's name for :class:`~coursekit.compile.io.In`) and
the submodules a Theano program reaches as attributes without importing them (``theano.ifelse``,
``theano.gof``, ``theano.compile``, ``theano.gradient``).
"""
from __future__ import annotations

import importlib

import coursekit

from .. import compile, gradient, ifelse, tensor  # noqa: F401,A004  (theano.compile, theano.ifelse ...)
from ..compile.io import In
from ..graph import Constant, Variable, clone_replace, graph_inputs
from ..scan_module import foldl, foldr, map, reduce  # noqa: F401,A004  (theano.map ...: scan shorthands)
from ..rop import Lop, Rop  # noqa: F401  (Theano's top level had them: from theano.gradient import Rop, Lop)
from . import gof, gpuarray, sandbox  # noqa: F401
from ..config import config

change_flags = config.change  # Theano's change_flags(floatX=...): a context manager, and a decorator as Theano's was

# what `from theano import *` gives: Theano's top-level names that coursekit has (the alias adds `theano`)
__all__ = ["config", "function", "shared", "In", "Out", "Param", "Mode", "compile", "clone", "scan", "map", "reduce",
           "foldl", "foldr", "grad", "Rop", "Lop", "dot", "change_flags",
           "pp", "printing", "tensor", "gof", "gradient", "ifelse", "sandbox", "scan_module", "gpuarray", "Apply",
           "Variable", "Constant", "Op", "Type", "SharedVariable"]
__version__ = "0.9.0"  # the Theano API this alias follows (libraries compare it); coursekit's own is separate


def clone(output, replace=None, strict=True, share_inputs=True):
    """``theano.clone``: a copy of the graph above ``output`` with the variables in ``replace`` swapped.

    ``share_inputs=False`` also copies the symbolic inputs (shared variables stay the same object: their
    storage is the point of them, as Theano's copies shared their storage too)."""
    if isinstance(replace, (list, tuple)):
        replace = dict(replace)
    single = isinstance(output, Variable)
    outs = [output] if single else list(output)
    swap = {k: tensor.as_tensor_variable(v) for k, v in (replace or {}).items()}
    if not share_inputs:
        for leaf in graph_inputs(outs, blockers=list(swap)):
            if leaf not in swap and not isinstance(leaf, Constant):
                swap[leaf] = leaf.clone()
    new, _ = clone_replace(outs, swap)
    return new[0] if single else new


class Param(In):
    """Theano 0.7's ``Param(variable, default=None, name=None, ...)``: an input with a default value."""

    def __init__(self, variable, default=None, name=None, mutable=False, strict=False, allow_downcast=None,
                 implicit=None, borrow=None):
        super().__init__(variable, name=name, value=default, strict=strict, allow_downcast=allow_downcast,
                         borrow=bool(borrow), mutable=mutable)


def __getattr__(name):
    value = getattr(coursekit, name)  # coursekit loads its heavier submodules on first use
    if name in ("printing", "scan_module", "random"):
        return importlib.import_module(f"coursekit.{name}")
    return value


def __dir__():
    return sorted(set(globals()) | set(dir(coursekit)))
