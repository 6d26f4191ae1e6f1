"""Symbolic differentiation: ``grad(cost, wrt)`` builds a graph for d(cost)/d(wrt).

Reverse mode, as in Theano: start from d(cost)/d(cost) = 1 and walk the
graph backwards; each op says, through ``L_op(inputs, outputs,
output_grads)``, how the gradient of its outputs flows to its inputs.
Contributions reaching the same variable by several paths are added.

Two kinds of "no gradient" are kept apart, because they mean different things
and deserve different messages:

* **disconnected** (the op returns ``None``): the output does not depend on
  that input at all, e.g. the shape of x does not depend on x's values;
* **undefined** (the op returns :class:`UndefinedGrad`): the output depends
  on the input but has no derivative, e.g. a rounding or an integer index.

Integers follow Theano's op contract: an integer-valued output is a step function of its inputs, so
what flows back through it is zero, and a gradient is never of an integer dtype.  A cost or ``wrt``
that is itself integer is refused (a TypeError) unless ``config.integer_grad == 'theano'`` (the
``theano`` alias sets it): then, as in Theano, ``grad(A + B, A)`` of an integer ``A`` is floatX zeros,
and ``grad(0.5 * T.cast(i, floatX), i)`` is 0.5 (the float function of ``i`` is defined between integers).
"""
from __future__ import annotations

import warnings

import numpy as np

from . import wiring
from .config import config
from .compile.function import function
from .graph import Variable, apply_nodes_between, clone_replace, format_trace
from .rewriting.stabilize import stabilize_graph
from .tensor import math as M
from .tensor.gradient_gates import (consider_constant, disconnected_grad, grad_clip, grad_scale,  # noqa: F401
                                    zero_grad)  # theano.gradient's identity ops with a changed gradient
from .tensor.type import TensorType
from .tensor.var import as_tensor_variable


class DisconnectedInputError(ValueError):
    """grad() was asked for an input the cost does not depend on."""


class UndefinedGradientError(TypeError):
    """The cost depends on an input through an op with no defined derivative."""


class GradNotImplementedError(UndefinedGradientError, NotImplementedError):
    """The cost depends on an input through an op whose gradient nobody wrote (:func:`grad_not_implemented`)."""


NullTypeGradError = UndefinedGradientError  # Theano's name for both errors


class UndefinedGrad:
    """Returned by an op's ``L_op`` for an input whose gradient does not exist."""

    error = UndefinedGradientError

    def __init__(self, reason):
        self.reason = reason


class NotImplementedGrad(UndefinedGrad):
    """Returned by an op's ``L_op`` for an input whose gradient exists but is not implemented."""

    error = GradNotImplementedError


def grad_undefined(op, x_pos, x, comment=""):
    """Theano's marker for "input ``x_pos`` (``x``) of ``op`` has no derivative": ``grad`` raises
    :class:`UndefinedGradientError` only when the cost depends on that input (an integer index usually does
    not).  Return it from ``grad``/``L_op`` in that input's place."""
    return UndefinedGrad(f"the grad method for input {x_pos} ({x}) of {op} is mathematically undefined. {comment}")


def grad_not_implemented(op, x_pos, x, comment=""):
    """Theano's marker for "input ``x_pos`` (``x``) of ``op`` has a derivative nobody wrote yet": ``grad`` raises
    :class:`GradNotImplementedError` (a ``NotImplementedError`` and a ``TypeError``, as Theano's
    documentation and its code each said) only when the cost depends on that input."""
    return NotImplementedGrad(f"the grad method for input {x_pos} ({x}) of {op} is not implemented. {comment}")


def grad(cost, wrt, consider_constant=None, disconnected_inputs="raise", known_grads=None, stabilize=True):  # noqa: F811 -- Theano's parameter name, beside its gate op of the same name
    """The gradient of the scalar ``cost`` with respect to ``wrt`` (a variable or a list).

    ``consider_constant``: variables treated as constants (no gradient flows
    through them).  ``disconnected_inputs``: what to do when ``cost`` does not
    depend on one of ``wrt``: ``'raise'``, ``'warn'`` (and return zeros) or
    ``'ignore'`` (zeros).  ``known_grads``: ``{var: gradient}`` to start from
    instead of (or besides) ``cost``.  ``stabilize``: differentiate the
    numerically stable form of the cost (:func:`stabilized`), so the gradient
    graph has no ``0 * inf`` in it.

    Three steps: check the arguments, stabilise the cost (optional, explicit),
    then one backward sweep (:func:`backward`).
    """
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    theano_integers = config.integer_grad == "theano"
    _check_wrt(wrt_list, disconnected_inputs, theano_integers)
    grads = {}  # variable -> list of gradient contributions
    if cost is not None:
        cost = _check_cost(cost, theano_integers)
        if stabilize:
            cost, consider_constant = stabilized(cost, consider_constant or [], keep=wrt_list)
        grads[cost] = [M.ones_like(cost, dtype=_gradient_dtype(cost))]
    for var, g in (known_grads or {}).items():
        grads.setdefault(var, []).append(as_tensor_variable(g))
    if not grads:
        raise ValueError("grad: give a cost or known_grads")
    backward(grads, wrt_list, list(consider_constant or []))
    results = [_as_gradient_of(w, _sum(grads[w])) if grads.get(w) else _disconnected(w, disconnected_inputs)
               for w in wrt_list]
    return results[0] if single else results


def stabilized(cost, consider_constant=(), keep=()):  # noqa: F811 -- the parameter grad passes on
    """``(cost, consider_constant)`` with the cost in its numerically stable form.

    ``log(sigmoid(z))`` becomes ``-softplus(-z)`` and so on: the canonicalize and
    stabilize rewrites applied to a clone of the cost graph, whose leaves are
    still the user's variables (``consider_constant`` is mapped to the clone).
    The same step whatever was imported: the rewrites are
    :mod:`coursekit.rewriting`'s, which sits below this module.

    Computed variables in ``keep`` (a ``wrt`` such as ``h = T.exp(x)``, as Theano allowed) stay in the
    result as they are: a stand-in leaf takes each one's place while the rewrites run (so none rewrites
    across it), and the variable itself is put back, still computed from its own inputs.
    """
    standins = {w: w.clone() for w in keep if w.owner is not None and w is not cost}
    memos = []
    if standins:
        (cost,), memo = clone_replace([cost], standins)
        memos.append(memo)
    (cost,), memo = stabilize_graph([cost])
    memos.append(memo)
    if standins:
        (cost,), memo = clone_replace([cost], {s: w for w, s in standins.items()})
        memos.append(memo)

    def follow(v):
        for memo in memos:
            v = memo.get(id(v), v)
        return v

    return cost, [follow(v) for v in consider_constant]


def backward(grads, wrt, blockers=()):
    """The reverse sweep: from ``grads`` ({variable: [contributions]}) to every variable ``wrt`` depends on.

    Each node, outputs first, gets the sum of its outputs' contributions and
    says through ``L_op`` what flows to each of its inputs; ``blockers`` stop
    the flow.  ``grads`` is filled in place.  A node whose outputs are all integer-valued passes
    zeros to its inputs (a step function's derivative), or nothing where its ``L_op`` says
    disconnected, or the undefined marker it gave.
    """
    nodes = apply_nodes_between(blockers, list(grads))
    depends = _depends_on(nodes, wrt, blockers)
    for node in reversed(nodes):
        if not any(id(i) in depends for i in node.inputs) or not any(grads.get(o) for o in node.outputs):
            continue
        out_grads = [_sum(grads[o]) if grads.get(o) else M.zeros_like(o) for o in node.outputs]
        integer_valued = not any(_is_float(o) for o in node.outputs)
        try:
            in_grads = node.op.L_op(node.inputs, node.outputs, out_grads)
        except NotImplementedError as exc:
            if not integer_valued:
                raise NotImplementedError(f"{exc}\n(needed for the gradient through {node}, created at "
                                          f"{format_trace(node.trace)})") from None
            in_grads = [M.zeros_like(i) for i in node.inputs]
        if len(in_grads) != len(node.inputs):
            raise ValueError(f"{node.op}.L_op returned {len(in_grads)} gradients for {len(node.inputs)} inputs")
        for inp, g in zip(node.inputs, in_grads):
            if id(inp) in depends and g is not None:
                if integer_valued and not isinstance(g, UndefinedGrad):
                    g = M.zeros_like(inp, dtype=_gradient_dtype(inp))
                grads.setdefault(inp, []).append(_checked_input_grad(node, inp, g))
    return grads


def _checked_input_grad(node, inp, g):
    """``g`` as the gradient of ``inp``: defined, of its rank, of its float dtype."""
    if isinstance(g, UndefinedGrad):
        raise g.error(
            f"the gradient of {node.op} with respect to its input {inp} is undefined ({g.reason}), and "
            f"the cost depends on it; the node was created at {format_trace(node.trace)}")
    if isinstance(g, Variable) and not isinstance(g.type, TensorType):
        return g  # a gradient of another type (a sparse matrix's, coursekit.sparse): its op made it to measure
    g = as_tensor_variable(g)
    if g.type.ndim != inp.type.ndim:
        raise ValueError(f"{node.op}.L_op returned a gradient of rank {g.type.ndim} for input {inp} "
                         f"of rank {inp.type.ndim}")
    if g.type.dtype != _gradient_dtype(inp) and (_is_float(inp) or not _is_float(g)):
        g = M.cast(g, _gradient_dtype(inp))
    return g


def _is_float(var):
    return var.type.dtype[0] in "fc"


def _gradient_dtype(var):
    """The dtype of ``var``'s gradient: its own if it is float, else floatX (never an integer, as Theano)."""
    return var.type.dtype if _is_float(var) else config.floatX


def _as_gradient_of(w, g):
    return g if g.type.dtype == _gradient_dtype(w) or _is_float(w) else M.cast(g, _gradient_dtype(w))


def _check_wrt(wrt_list, disconnected_inputs, theano_integers=False):
    for i, w in enumerate(wrt_list):
        if not isinstance(w, Variable):
            raise TypeError(f"grad: wrt[{i}] is a {type(w).__name__}, not a symbolic variable")
        if not _is_float(w) and not theano_integers:
            raise TypeError(f"grad: cannot differentiate with respect to {w} of integer/bool type {w.type}; "
                            "only float variables have gradients (set coursekit.config.integer_grad = 'theano' "
                            "for Theano's floatX zeros)")
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError("disconnected_inputs must be 'raise', 'warn' or 'ignore'")


def _check_cost(cost, theano_integers=False):
    cost = as_tensor_variable(cost)
    if cost.type.ndim != 0:
        raise TypeError(f"grad: the cost must be a scalar, but it is {cost.type}. "
                        "Reduce it first (for instance cost.sum() or cost.mean()).")
    if not _is_float(cost) and not theano_integers:
        raise TypeError(f"grad: the cost {cost} has integer type {cost.type}; it has no gradient (set "
                        "coursekit.config.integer_grad = 'theano' for Theano's zeros)")
    return cost


def _disconnected(w, disconnected_inputs):
    message = (f"grad: the cost does not depend on {w} ({w.type}), created at {format_trace(w.tag.trace)}. "
               "Check that the cost really uses it, or pass disconnected_inputs='ignore' to get zeros.")
    if disconnected_inputs == "raise":
        raise DisconnectedInputError(message)
    if disconnected_inputs == "warn":
        warnings.warn(message, stacklevel=3)
    return M.zeros_like(w, dtype=_gradient_dtype(w))


def _sum(terms):
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _depends_on(nodes, wrt, blockers):
    """ids of variables whose value depends on some variable in ``wrt``."""
    depends = set(map(id, wrt))
    blocked = set(map(id, blockers))
    for node in nodes:
        if any(id(i) in depends and id(i) not in blocked for i in node.inputs):
            depends.update(id(o) for o in node.outputs)
    return depends - (blocked - set(map(id, wrt)))


# --------------------------------------------------------------- checking
def numeric_grad(f, values, eps):
    """Central finite differences of the scalar function ``f`` at ``values``."""
    result = []
    for i, v in enumerate(values):
        g = np.zeros_like(v, dtype="float64")
        for idx in np.ndindex(v.shape):
            plus = [x.copy() for x in values]
            minus = [x.copy() for x in values]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (float(f(*plus)) - float(f(*minus))) / (2 * eps)
        result.append(g)
    return result


def verify_grad(fun, pt, n_tests=2, rng=None, eps=None, abs_tol=None, rel_tol=None, mode=None):
    """Check ``grad`` of ``fun`` against finite differences at the point ``pt``.

    ``fun`` takes symbolic tensors (one per array in ``pt``) and returns a
    tensor.  A random projection turns it into a scalar, as in Theano, so
    every output element is checked.  Raises ``AssertionError`` with the
    worst mismatch on failure.
    """
    rng = rng or np.random.default_rng(42)
    pt = [np.array(p) for p in pt]
    dtype = np.result_type(*[p.dtype for p in pt])
    low_precision = dtype in (np.float32, np.float16)
    eps = eps or (1e-2 if low_precision else 1e-6)
    abs_tol = abs_tol if abs_tol is not None else (1e-2 if low_precision else 1e-5)
    rel_tol = rel_tol if rel_tol is not None else (1e-2 if low_precision else 1e-5)
    # as in Theano, a dimension of length 1 in the point is broadcastable in the input's type, so
    # the gradient of a value broadcast against a larger one is summed back to the value's shape
    inputs = [TensorType(p.dtype, tuple(s == 1 for s in p.shape)).make_variable(f"input{i}")
              for i, p in enumerate(pt)]
    out = fun(*inputs)
    for _ in range(n_tests):
        probe_f = function(inputs, out, mode=mode)
        sample = np.asarray(probe_f(*pt))
        proj = rng.random(sample.shape).astype(sample.dtype) if sample.ndim else np.asarray(1, sample.dtype)
        cost = M.sum(out * proj)
        sym = grad(cost, inputs, disconnected_inputs="ignore")
        cost_f = function(inputs, cost, mode=mode)
        grad_f = function(inputs, sym, mode=mode)
        analytic = [np.asarray(g, dtype="float64") for g in grad_f(*pt)]
        numeric = numeric_grad(lambda *v: cost_f(*[x.astype(p.dtype) for x, p in zip(v, pt)]),
                               [p.astype("float64") for p in pt], eps)
        for i, (a, n) in enumerate(zip(analytic, numeric)):
            if a.shape != n.shape:
                raise AssertionError(f"verify_grad: the gradient of input {i} has shape {a.shape}, "
                                     f"but the input has shape {n.shape}")
            err = np.abs(a - n)
            bad = ~(err <= abs_tol + rel_tol * np.abs(n))  # a NaN or inf on either side is a failure too
            if np.any(bad):
                score = np.where(np.isfinite(err), err - rel_tol * np.abs(n), np.inf)
                worst = np.unravel_index(np.argmax(score), err.shape) if err.ndim else ()
                where = tuple(int(k) for k in worst)
                raise AssertionError(
                    f"verify_grad: gradient of input {i} is wrong at index {where}: symbolic {float(a[worst]):.6g}, "
                    f"finite differences {float(n[worst]):.6g} ({int(bad.sum())} of {bad.size} elements wrong; "
                    f"abs_tol={abs_tol}, rel_tol={rel_tol}, eps={eps})")


def __getattr__(name):
    # Rop / Lop (coursekit.rop) and jacobian / hessian (coursekit.jacobian, built on scan) are built on grad,
    # one floor up: theano.gradient had them here, so they are reached here too
    if name in ("Rop", "Lop", "jacobian", "hessian"):
        return wiring.get(name)
    raise AttributeError(f"module 'coursekit.gradient' has no attribute {name!r}")
