"""Loops in graphs: ``scan`` (Theano's ``theano.scan``) and ``until`` for early exit.

``coursekit.scan_module`` has the name of Theano's own package, so
``theano.scan_module.until`` ports unchanged.  See :mod:`.builder` (the
``scan`` function), :mod:`.op` (the Scan op and its loop) and :mod:`.grad`
(the gradient: a second scan, running backwards through time).
"""
from .builder import ScanError, scan, until  # noqa: F401
from .folds import foldl, foldr, map, reduce  # noqa: F401,A004  (theano.map, theano.reduce ...)
from .op import Scan, ScanInfo  # noqa: F401
from . import rewrites  # noqa: F401,E402  (registers scan_dot_to_gemm)
