"""Jacobians and Hessians: ``grad`` of every element of an expression, in one ``scan`` over its indices.

``jacobian(y, x)`` differentiates ``y.flatten()[i]`` for each ``i`` inside a loop, as Theano did, so the graph
stays one gradient long whatever the size of ``y``; ``hessian`` is the Jacobian of the gradient.  They sit
above ``scan_module`` (which they use), so :mod:`coursekit.gradient` reaches them through its
``jacobian``/``hessian`` roles (``coursekit.gradient.jacobian``, ``T.jacobian``).
"""
from __future__ import annotations

from .gradient import grad
from .scan_module import scan
from .tensor.construct import arange
from .tensor.var import as_tensor_variable


def jacobian(expression, wrt, consider_constant=None, disconnected_inputs="raise"):
    """d expression[i] / d wrt for every element i: shape ``expression.shape + wrt.shape`` (a list for a list)."""
    expression = as_tensor_variable(expression)
    single = not isinstance(wrt, (list, tuple))
    wrt = [wrt] if single else list(wrt)
    if expression.type.ndim == 0:
        result = grad(expression, wrt, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        return result[0] if single else result
    flat = expression.flatten()

    def row(i):
        return grad(flat[i], wrt, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)

    rows, _ = scan(row, sequences=arange(flat.shape[0]))
    rows = rows if isinstance(rows, list) else [rows]
    shaped = [r if expression.type.ndim == 1 else
              r.reshape(tuple(expression.shape[i] for i in range(expression.type.ndim))
                        + tuple(w.shape[i] for i in range(w.type.ndim)))
              for r, w in zip(rows, wrt)]
    return shaped[0] if single else shaped


def hessian(cost, wrt, consider_constant=None, disconnected_inputs="raise"):
    """The matrix of second derivatives of the scalar ``cost`` with respect to each vector in ``wrt``."""
    cost = as_tensor_variable(cost)
    if cost.type.ndim != 0:
        raise TypeError(f"hessian: the cost must be a scalar, got {cost.type}")
    single = not isinstance(wrt, (list, tuple))
    wrt = [wrt] if single else list(wrt)
    result = []
    for w in wrt:
        if w.type.ndim != 1:
            raise TypeError(f"hessian: {w} is {w.type}; Theano's hessian takes vectors (flatten the variable first)")
        g = grad(cost, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        result.append(jacobian(g, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs))
    return result[0] if single else result
