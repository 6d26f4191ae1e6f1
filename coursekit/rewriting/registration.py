"""Theano's way of adding a rewrite: an optimizer object (``transform(node)``, ``tracks()``) and ``register_*``.

coursekit's own way is a function registered with :func:`~coursekit.rewriting.local_rewrite`.  Programs and
libraries written for Theano build optimizer objects instead, and register them by stage::

    @local_optimizer([MyOp])
    def local_my_op(node):            # a list of replacements, or False when it does not apply
        ...
    register_canonicalize(local_my_op)
    register_canonicalize(OpRemove(my_view_op), name="remove_my_view_op")

``OpRemove(op)`` replaces every application of ``op`` by its input: the way to take an identity op
(a :class:`~coursekit.compile.ViewOp` whose gradient is clipped or scaled) out of the compiled graph once
its gradient has been built.  Rewrites registered here are tagged ``compile_only``: as in Theano, they run
when a function is compiled, never on the cost graph ``grad`` differentiates.
"""
from __future__ import annotations

import inspect

from . import local_rewrite

__all__ = ["LocalOptimizer", "OpRemove", "local_optimizer", "register_canonicalize", "register_stabilize",
           "register_specialize", "COMPILE_ONLY"]

COMPILE_ONLY = "compile_only"


class LocalOptimizer:
    """Theano's local optimizer: ``transform(node)`` returns replacements for ``node.outputs`` or False."""

    def tracks(self):
        """The op classes or ops whose nodes ``transform`` looks at; None: every node."""
        return None

    def transform(self, node):
        raise NotImplementedError(f"{type(self).__name__}.transform(node) is not written")


class OpRemove(LocalOptimizer):
    """Removes every application of ``op``: each output is replaced by the matching input."""

    def __init__(self, op):
        self.op = op
        self.__name__ = f"OpRemove({op})"

    def tracks(self):
        return [self.op]

    def transform(self, node):
        if node.op != self.op:
            return False
        return list(node.inputs[:len(node.outputs)])

    def __str__(self):
        return self.__name__


class _FromFunction(LocalOptimizer):
    def __init__(self, fn, tracks):
        self.fn, self._tracks, self.__name__ = fn, tracks, fn.__name__
        self.transform = fn  # fn(node), or fn(fgraph, node) as Theano 0.10 wrote them

    def tracks(self):
        return self._tracks

    def __call__(self, *args):
        return self.fn(*args)


def local_optimizer(tracks, inplace=False, requirements=()):
    """Theano's decorator: ``fn(node)`` (or ``fn(fgraph, node)``) becomes a :class:`LocalOptimizer`."""
    if tracks is not None and not isinstance(tracks, (list, tuple)):
        raise TypeError(f"local_optimizer(tracks): a list of op classes or ops (or None), got {tracks!r}")

    def decorator(fn):
        return _FromFunction(fn, list(tracks) if tracks is not None else None)

    return decorator


def _as_rewrite(lopt):
    """``fn(fgraph, node)`` for coursekit's pass, from a Theano optimizer object or a plain function."""
    transform = lopt.transform if hasattr(lopt, "transform") else lopt
    params = [p for p in inspect.signature(transform).parameters.values() if p.kind != p.VAR_POSITIONAL]
    wants_fgraph = len(params) >= 2

    def rewrite(fgraph, node):
        result = transform(fgraph, node) if wants_fgraph else transform(node)
        if not result:
            return None
        if isinstance(result, dict):  # Theano also allowed {old output: new output}
            return [result.get(out, out) for out in node.outputs]
        return list(result)

    return rewrite


def _register(stage, lopt, tags, name):
    if isinstance(lopt, str):  # @register_canonicalize("tag", ...): a decorator
        return lambda inner: _register(stage, inner, (lopt, *tags), name)
    if not (callable(lopt) or hasattr(lopt, "transform")):
        raise TypeError(f"register_{stage}: expected a local optimizer (an object with transform(node), e.g. "
                        f"OpRemove(op), or a function decorated with @local_optimizer([...])), got {lopt!r}")
    name = name or getattr(lopt, "__name__", None)
    if name is None:
        raise TypeError(f"register_{stage}({lopt!r}): this optimizer has no __name__; pass name='...'")
    tracks = lopt.tracks() if hasattr(lopt, "tracks") else None
    local_rewrite(stage, COMPILE_ONLY, *tags, name=name, tracks=tracks)(_as_rewrite(lopt))
    return lopt


def register_canonicalize(lopt, *tags, name=None, **kwargs):
    """Theano's ``T.opt.register_canonicalize``: run ``lopt`` in the canonicalize stage of every compile."""
    return _register("canonicalize", lopt, tags, name)


def register_stabilize(lopt, *tags, name=None, **kwargs):
    """Theano's ``T.opt.register_stabilize``."""
    return _register("stabilize", lopt, tags, name)


def register_specialize(lopt, *tags, name=None, **kwargs):
    """Theano's ``T.opt.register_specialize``."""
    return _register("specialize", lopt, tags, name)
