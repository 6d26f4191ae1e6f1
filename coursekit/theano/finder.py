"""The import hook behind ``import theano``: every ``theano.*`` name resolves to coursekit's module.

A finder on ``sys.meta_path`` answers for names under ``theano``.  Each one is loaded as an
:class:`AliasModule`: a thin module object that forwards attribute reads and writes to the coursekit
module it stands for, so ``theano.tensor.matrix is coursekit.tensor.matrix``.  It exists (instead of
putting coursekit's own module objects in ``sys.modules``) so that every name the program reads can be
written down for the porting report, and a name coursekit lacks fails with a message that says so.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

from .aliases import ALIAS_ROOT, alias_name, real_name
from .report import RECORD


class AliasModule(types.ModuleType):
    """``theano.X``: reads and writes go to ``coursekit.X``; the names read are recorded."""

    def __init__(self, alias, real):
        super().__init__(alias, real.__doc__)
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "__path__", [])  # any alias may have submodules; the finder decides

    def __getattr__(self, name):
        real = object.__getattribute__(self, "_real")
        if name == self.__name__ == ALIAS_ROOT:  # Theano's __init__ ran `import theano.tests`, binding theano.theano
            return self                          # to itself: `from theano import theano` and `import *` use it
        if name == "__all__":  # `from theano.tensor import *` reads it, then every name in it
            public = getattr(real, "__all__", None) or [n for n in vars(real) if not n.startswith("_")]
            public = [*public, ALIAS_ROOT] if self.__name__ == ALIAS_ROOT else public
            object.__setattr__(self, "_star", set(public))
            return list(public)
        if name.startswith("__") and name.endswith("__"):
            return getattr(real, name)
        star = self.__dict__.get("_star")
        if star and name in star:  # read by the import *: not a name the program chose to use
            star.discard(name)
            return getattr(real, name)
        where = f"{self.__name__}.{name}"
        try:
            value = getattr(real, name)
        except AttributeError:
            if _module_exists(where):  # a submodule not imported yet: theano.sandbox.rng_mrg, theano.gof.graph
                return importlib.import_module(where)
            if not name.startswith("_"):  # private names (mock's _mock_name, hasattr probes) are no Theano API
                RECORD.missing(where)
            raise AttributeError(f"{where}: coursekit has no {name!r} in {real.__name__} (a Theano name it does "
                                 f"not implement yet); see the porting report (python -m coursekit.theano "
                                 f"--report ...) for everything the program used") from None
        RECORD.used(where, value)
        if isinstance(value, types.ModuleType) and value.__name__.startswith("coursekit"):
            return importlib.import_module(alias_name(value.__name__))
        return value

    def __setattr__(self, name, value):
        # the import system stores submodules and module attributes here; programs that patch a
        # Theano name (theano.config.x = ..., T.foo = bar) reach the coursekit module
        if isinstance(value, AliasModule) or (name.startswith("__") and name.endswith("__")):
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_real"), name, value)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_real"))

    def __repr__(self):
        return f"<module {self.__name__!r}: coursekit's {object.__getattribute__(self, '_real').__name__}>"


def _module_exists(alias):
    real = real_name(alias)
    try:
        return real is not None and importlib.util.find_spec(real) is not None
    except ModuleNotFoundError:
        return False


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return AliasModule(spec.name, self.real)

    def exec_module(self, module):
        RECORD.imported(module.__name__)


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``theano`` and ``theano.*`` as the coursekit modules :func:`real_name` names."""

    def find_spec(self, fullname, path=None, target=None):
        real = real_name(fullname)
        if real is None:
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not real.startswith(exc.name):
                raise  # a dependency of the coursekit module is missing: that is a real error
            RECORD.missing(fullname)
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module), is_package=True)


FINDER = AliasFinder()


def install_finder():
    if FINDER not in sys.meta_path:
        sys.meta_path.insert(0, FINDER)


def remove_finder():
    if FINDER in sys.meta_path:
        sys.meta_path.remove(FINDER)
    for name in [n for n in sys.modules if n == "theano" or n.startswith("theano.")]:
        if isinstance(sys.modules[name], AliasModule):
            del sys.modules[name]
