"""Run Theano programs unchanged: ``import theano`` resolves to coursekit, on request.

Two documented ways, nothing else turns it on:

* a script or module, from the command line::

      python -m coursekit.theano script.py [args]
      python -m coursekit.theano -m pytest lasagne/tests      # a module, as `python -m`
      python -m coursekit.theano --report script.py           # and print the porting report at exit

* a notebook or an interactive session, before the first ``import theano`` (or ``import lasagne``)::

      import coursekit.theano
      coursekit.theano.install()

Then ``theano`` and every ``theano.*`` module name (``theano.tensor.nnet.conv``, ``theano.gof.graph``,
``theano.sandbox.rng_mrg`` ...) is coursekit's, for the program and for any library it imports, without
editing either.  A real Theano installed in the same environment is never shadowed silently:
:func:`install` refuses, naming it, unless ``shadow_real_theano=True`` (``--shadow-real-theano``).

Under the alias Theano's own defaults apply: ``floatX`` is float64 unless ``THEANO_FLAGS`` or
``COURSEKIT_FLAGS`` sets it.  ``import coursekit`` alone keeps the course's float32.
"""
from __future__ import annotations

import importlib.util
import os
import sys

from ..config import config
from .finder import AliasFinder, AliasModule, install_finder, remove_finder
from .report import RECORD, Record

__all__ = ["install", "uninstall", "installed", "report", "RealTheanoError", "AliasFinder", "AliasModule",
           "Record"]


class RealTheanoError(ImportError):
    """A real Theano is installed: the alias would hide it."""


def _real_theano():
    """Where an installed (real) Theano lives, or ``None``."""
    existing = sys.modules.get("theano")
    if existing is not None and not isinstance(existing, AliasModule):
        return getattr(existing, "__file__", None) or repr(existing)
    spec = importlib.util.find_spec("theano") if existing is None else None  # called before the finder is in
    return None if spec is None else (spec.origin or str(spec.submodule_search_locations))


def _flags_set_floatx():
    return any("floatx=" in os.environ.get(var, "").lower().replace(" ", "")
               for var in ("THEANO_FLAGS", "COURSEKIT_FLAGS"))


def installed():
    """Whether ``import theano`` currently resolves to coursekit."""
    return any(isinstance(f, AliasFinder) for f in sys.meta_path)


def install(shadow_real_theano=False, theano_defaults=True):
    """Make ``import theano`` (and every ``theano.*``) resolve to coursekit from now on.

    ``shadow_real_theano``: go ahead even though a real Theano is installed (it is hidden until
    :func:`uninstall`).  ``theano_defaults``: set Theano's ``floatX=float64`` default unless
    ``THEANO_FLAGS``/``COURSEKIT_FLAGS`` names a floatX, and Theano's typing of Python floats beside
    integer tensors and Python ints (``config.autocast='theano'``: ``bool_mask * 1.0`` is floatX, not NumPy 2's
    float64, and ``T.constant(1)`` is int8) and of integer gradients (``config.integer_grad='theano'``);
    pass ``False`` to keep the current settings.
    """
    if not installed():
        real = _real_theano()
        if real is not None and not shadow_real_theano:
            raise RealTheanoError(
                f"a real Theano is installed ({real}); coursekit will not hide it. Run the program with that "
                "Theano, or ask for coursekit explicitly: coursekit.theano.install(shadow_real_theano=True) or "
                "python -m coursekit.theano --shadow-real-theano script.py")
        install_finder()
    if theano_defaults:
        config.autocast = "theano"  # Python floats beside integer tensors are floatX; T.constant(1) is int8
        config.integer_grad = "theano"  # grad(A + B, A) of integer A is float zeros, as Theano's op contract
        if not _flags_set_floatx():
            config.floatX = "float64"


def uninstall():
    """Undo :func:`install`: ``theano`` names are no longer coursekit's (floatX is left as it is)."""
    remove_finder()


def report(path=None, program="the program"):
    """The porting report so far, as text (and written to ``path`` when given; ``.json`` writes JSON)."""
    if path is not None:
        RECORD.write(path, program)
    return RECORD.text(program)
