"""``theano`` itself under the alias: coursekit's top level, plus the packages only Theano had.

Everything ``import coursekit`` offers is here (read through to :mod:`coursekit`, which has ``clone``,
``Param``, ``change_flags``, ``Rop``/``Lop`` and ``map``/``reduce``/``foldl``/``foldr`` too, so a port that
changes its imports finds them); this module adds only what exists for Theano's paths: ``theano.gof``,
``theano.gpuarray``, ``theano.sandbox`` (in ``coursekit/theano``), ``__version__`` (the Theano API this
alias follows) and ``theano.theano``.
"""
from __future__ import annotations

import importlib

import coursekit

from .. import compile, gradient, ifelse, tensor  # noqa: F401,A004  (theano.compile, theano.ifelse ...)
from ..compile.clone import clone  # noqa: F401  (theano.clone)
from ..compile.io import In, Param  # noqa: F401  (Theano 0.7's Param)
from ..scan_module import foldl, foldr, map, reduce  # noqa: F401,A004  (theano.map ...: scan shorthands)
from ..rop import Lop, Rop  # noqa: F401  (Theano's top level had them: from theano.gradient import Rop, Lop)
from . import gof, gpuarray, sandbox  # noqa: F401
from ..config import config

from ..config import change_flags  # noqa: E402,F401  (a context manager, and a decorator as Theano's was)

# what `from theano import *` gives: Theano's top-level names that coursekit has (the alias adds `theano`)
__all__ = ["config", "function", "shared", "In", "Out", "Param", "Mode", "compile", "clone", "scan", "map", "reduce",
           "foldl", "foldr", "grad", "Rop", "Lop", "dot", "change_flags",
           "pp", "printing", "tensor", "gof", "gradient", "ifelse", "sandbox", "scan_module", "gpuarray", "Apply",
           "Variable", "Constant", "Op", "Type", "SharedVariable"]
__version__ = "0.9.0"  # the Theano API this alias follows (libraries compare it); coursekit's own is separate


def __getattr__(name):
    value = getattr(coursekit, name)  # coursekit loads its heavier submodules on first use
    if name in ("printing", "scan_module", "random"):
        return importlib.import_module(f"coursekit.{name}")
    return value


def __dir__():
    return sorted(set(globals()) | set(dir(coursekit)))
