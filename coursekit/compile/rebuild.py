"""Pickling and copying compiled functions: both compile again from what ``function()`` was given.

A compiled function holds generated code and closures over storage cells,
which pickle cannot store; what it was *made from* (the graph, the updates,
the givens, the mode) pickles fine.  So a pickled function is that recipe,
and unpickling compiles it again; shared variables travel with the graph, so
a model (a dict of shared variables and the functions that use them) comes
back with the same values, still shared between its functions.

``Function.copy(swap={old: new}, delete_updates=False)`` (Theano's) compiles
the same recipe with some shared variables replaced by others of the same
type, and optionally without its updates.
"""
from __future__ import annotations

from .sharedvalue import SharedVariable


def remember(fn, **spec):
    """Keep the arguments ``fn`` was compiled from (called by ``function``)."""
    fn.rebuild_spec = spec
    return fn


def rebuild(spec):
    """Compile a function again from its recipe (used by pickle)."""
    from .function import function

    return function(**spec)


def copy_function(fn, share_memory=False, swap=None, delete_updates=False, name=None, profile=None):
    """A new function computing what ``fn`` computes, with shared variables swapped and/or no updates."""
    from .function import function

    spec = dict(fn.rebuild_spec)
    swap = dict(swap or {})
    for old, new in swap.items():
        if not isinstance(old, SharedVariable) or not isinstance(new, SharedVariable):
            raise TypeError(f"Function.copy(swap=...): swap maps shared variables to shared variables; got {old!r} -> "
                            f"{new!r}")
        if old.type != new.type:
            raise TypeError(f"Function.copy(swap=...): {old} is {old.type} but {new} is {new.type}; a swapped shared "
                            "variable must have the same type")
    givens = spec.get("givens") or {}
    givens = list(givens.items()) if isinstance(givens, dict) else list(givens)
    spec["givens"] = givens + list(swap.items())
    updates = spec.get("updates")
    if delete_updates:
        spec["updates"], spec["no_default_updates"] = None, True
    elif updates:
        pairs = list(updates.items()) if isinstance(updates, dict) else list(updates)
        spec["updates"] = [(swap.get(target, target), value) for target, value in pairs]
    spec["name"] = name or spec.get("name")
    if profile is not None:
        spec["profile"] = profile
    return function(**spec)
