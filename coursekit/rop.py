"""Jacobian products: ``Lop`` (v^T J, reverse mode) and ``Rop`` (J v, forward mode), as Theano's.

``Lop(f, wrt, v)`` is reverse mode started from ``v`` instead of a cost:
``grad(None, wrt, known_grads={f: v})``.  ``Rop(f, wrt, v)`` is computed
with the *double-L* trick rather than with a forward rule per op: for a
dummy ``u`` shaped like ``f``, ``g(u) = Lop(f, wrt, u) = J^T u`` is linear
in ``u``, so the gradient of ``sum(g(u) * v)`` with respect to ``u`` is
``J v``.  Every op with a gradient therefore has an R-op too, as long as
its gradient graph can be differentiated again.
"""
from __future__ import annotations

from .graph import Variable, clone_replace
from .gradient import grad
from .tensor import math as M
from .tensor.type import host_like
from .tensor.var import as_tensor_variable


def _as_list(x, what):
    single = not isinstance(x, (list, tuple))
    items = [x] if single else list(x)
    for i, v in enumerate(items):
        if not isinstance(v, Variable):
            raise TypeError(f"{what}[{i}] is a {type(v).__name__}, not a symbolic variable")
    return items, single


def Lop(f, wrt, eval_points, consider_constant=None, disconnected_inputs="raise"):  # noqa: N802 - Theano's name
    """``v^T J``: the gradient of ``f`` with respect to ``wrt``, weighted by ``eval_points`` (shaped like ``f``)."""
    fs, _ = _as_list(f, "f")
    points = eval_points if isinstance(eval_points, (list, tuple)) else [eval_points]
    if len(points) != len(fs):
        raise ValueError(f"Lop: {len(fs)} output(s) but {len(points)} eval_points; give one per output of f")
    known = {}
    for k, (out, v) in enumerate(zip(fs, points)):
        v = as_tensor_variable(v)
        if v.type.ndim != out.type.ndim:
            raise TypeError(f"Lop: eval_points[{k}] is {v.type} but f[{k}] is {out.type}; they must have the same rank")
        known[out] = M.cast(v, out.type.dtype) if v.type.dtype != out.type.dtype else v
    return grad(None, wrt, consider_constant=consider_constant, known_grads=known,
                disconnected_inputs=disconnected_inputs)


def Rop(f, wrt, eval_points, disconnected_outputs="raise"):  # noqa: N802 - Theano's name
    """``J v``: the directional derivative of ``f`` along ``eval_points`` (one per variable of ``wrt``)."""
    fs, single_f = _as_list(f, "f")
    wrts, _ = _as_list(wrt, "wrt")
    points = list(eval_points) if isinstance(eval_points, (list, tuple)) else [eval_points]
    if len(points) != len(wrts):
        raise ValueError(f"Rop: {len(wrts)} variable(s) in wrt but {len(points)} eval_points; give one per variable")
    dummies = [host_like(out) for out in fs]
    pulled = Lop(fs, wrts, dummies, disconnected_inputs="ignore")
    pulled = pulled if isinstance(pulled, list) else [pulled]
    total = None
    for k, (g, v, w) in enumerate(zip(pulled, points, wrts)):
        v = as_tensor_variable(v)
        if v.type.ndim != w.type.ndim:
            raise TypeError(f"Rop: eval_points[{k}] is {v.type} but wrt[{k}] is {w.type}; they must have the same rank")
        term = M.sum(g * v)
        total = term if total is None else total + term
    results = grad(total, dummies, disconnected_inputs="ignore")
    # the result is linear in the dummies, so their value does not matter: give them one of the right shape
    results, _ = clone_replace(results, {u: M.zeros_like(out) for u, out in zip(dummies, fs)})
    return results[0] if single_f else results
