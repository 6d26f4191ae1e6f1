"""How one elementwise node runs on the CPU: one thunk, written for the node, with its fast cases.

Every case computes the same thing -- ``impl(*inputs)`` with NumPy's
broadcasting, checked against the types, written into the previous output
buffer when it fits -- and differs only in what the types let it skip:

=================  ===============================================================
``general``        any inputs: reuse the buffer if it fits (:func:`fits_buffer`),
                   otherwise allocate, and check any broadcast (:func:`broadcast_checker`)
``zero_d``         a 0-d float result: NumPy's scalar operators, or a fused chain's
                   ``scalar_impl`` (a tenth of a ufunc call's cost, W2)
``wide``           wide inputs of one shape plus narrow ones (length 1 everywhere,
                   passed as 0-d: NumPy broadcasts those twice as fast, W3); anything
                   unusual falls back to ``general``
``loop``           a numba loop kernel (:mod:`.numba_kernels`); inputs it cannot loop
                   over fall back to ``general``
=================  ===============================================================

A thunk is Python generated for the node's case and number of inputs
(:func:`_source`, compiled once per shape of code), because a loop over the
inputs costs more than the arithmetic on the few hundred elements of W3.
``print(cpu_thunk_source(node))`` shows what a node runs.
"""
from __future__ import annotations

import numpy as np

from ..graph import Constant
from .ops import SCALAR_OPERATORS

_FACTORIES: dict = {}  # (case, pattern) -> a function making the thunk


def cpu_thunk(node, scalar_op, cells, out_cell):
    """The thunk computing ``node`` (an elementwise node of ``scalar_op``) from ``cells`` into ``out_cell``."""
    case, pattern, fn = _case(node, scalar_op, cells)
    if case == "zero_d":
        return _factory(case, pattern)(fn, out_cell, *cells)
    impl = getattr(scalar_op, "numpy_impl", scalar_op.impl) if case == "loop" else scalar_op.impl
    general = _factory("general", (len(cells),))(impl, out_cell, broadcast_checker(node), fits_buffer, *cells)
    if case == "general":
        return general
    return _factory(case, pattern)(fn, out_cell, general, *cells)


def cpu_thunk_source(node, scalar_op=None, cells=None):
    """The Python source of the thunk ``cpu_thunk`` makes for ``node`` (for reading)."""
    scalar_op = scalar_op or node.op.scalar_op
    cells = cells or [[None] for _ in node.inputs]
    case, pattern, _ = _case(node, scalar_op, cells)
    return _source(case, pattern)


def _case(node, scalar_op, cells):
    """(case, pattern, function) for the node: see the module's table."""
    n = len(cells)
    out = node.outputs[0].type
    if out.ndim == 0:
        fn = zero_d_function(node, scalar_op)
        if fn is not None:
            return "zero_d", (n,), fn
    loop = getattr(scalar_op, "loop_impl", None)
    if loop is not None:
        return "loop", (n,), loop
    kinds = pattern_of(node, cells) if n > 1 else None
    if kinds is not None:
        return "wide", kinds, scalar_op.impl
    return "general", (n,), scalar_op.impl


def zero_d_function(node, scalar_op):
    """For a 0-d float node whose inputs all have its dtype: the Python operator giving exactly the
    ufunc's result (``SCALAR_OPERATORS``), else a fused chain's ``scalar_impl``; None otherwise."""
    out = node.outputs[0].type
    if out.ndim:
        return None
    if (out.dtype in ("float32", "float64") and scalar_op.name in SCALAR_OPERATORS
            and all(v.type.dtype == out.dtype for v in node.inputs)):
        return SCALAR_OPERATORS[scalar_op.name]
    return getattr(scalar_op, "scalar_impl", None)


def pattern_of(node, cells):
    """Per input: 'w' (wide), 'n' (narrow, read as 0-d) or 'z' (already 0-d), or None when the
    ``wide`` case does not apply: a 0-d result, no wide input, or mixed dtypes (NumPy 1 casts a 0-d
    operand by value, so squeezing could change the result's dtype there)."""
    types = [v.type for v in node.inputs]
    if node.outputs[0].type.ndim == 0 or len({t.dtype for t in types}) != 1:
        return None
    kinds = []
    for t, cell in zip(types, cells):
        if not all(t.broadcastable):
            kinds.append("w")
        elif isinstance(cell[0], np.ndarray) and cell[0].ndim == 0:  # a constant squeezed at link time
            kinds.append("z")
        else:
            kinds.append("n")
    if "w" not in kinds:
        return None
    return tuple(kinds)


def squeezed_constant_cell(var, node):
    """A private cell holding a one-element constant as a 0-d array, or None.

    Constants are padded to the op's rank as (1, ..., 1) arrays; NumPy runs
    about twice as fast when such an operand is 0-d, and the result's shape is
    the same as long as another input has the full rank (Elemwise pads every
    non-constant input to it).
    """
    if not isinstance(var, Constant) or var.data.size != 1 or var.data.ndim == 0:
        return None
    if all(isinstance(v, Constant) for v in node.inputs):
        return None
    return [var.data.reshape(())]


def fits_buffer(out_shape, values, check):
    """Can the result of broadcasting ``values`` be written into a buffer of ``out_shape``?

    Yes when every input has the buffer's rank, each of its lengths is 1 or the
    buffer's, and every buffer length is reached by some input (otherwise NumPy
    would broadcast the inputs *up to* the buffer: a wrong, larger result).
    Shapes that broadcast are checked against the declared pattern first.
    """
    shapes = [getattr(v, "shape", ()) for v in values]
    if all(s == out_shape for s in shapes):
        return True
    shapes = [s for s in shapes if s != ()]  # 0-d operands (one-element constants) broadcast to anything
    if not shapes or any(len(s) != len(out_shape) for s in shapes):
        return False
    for axis, size in enumerate(out_shape):
        lengths = [s[axis] for s in shapes]
        if size not in lengths and size != 1 or any(n != size and n != 1 for n in lengths):
            return False
    check(values, out_shape)
    return True


def broadcast_checker(node):
    """``check(values, out_shape)``, run only when an input's shape differs from the output's.

    NumPy would broadcast any length-1 dimension.  coursekit, like Theano,
    broadcasts only along dimensions the *type* says may broadcast (``T.row``,
    ``T.col``, constants, ``broadcastable=`` on shared variables, ``'x'`` in a
    dimshuffle).  Otherwise the gradient of the smaller input would come back
    with the larger shape, and an update would silently reshape a parameter.
    """
    # only inputs with a dimension that may not broadcast need looking at
    watched = [(k, v.type.broadcastable) for k, v in enumerate(node.inputs) if not all(v.type.broadcastable)]

    def check(values, out_shape):
        for k, bcast in watched:
            shape = np.shape(values[k])
            if shape == out_shape:
                continue
            for axis, (size, out_size, may_broadcast) in enumerate(zip(shape, out_shape, bcast)):
                if size == 1 and out_size != 1 and not may_broadcast:
                    raise ValueError(
                        f"input {k} ({node.inputs[k]}) has length 1 in dimension {axis} and would be broadcast to "
                        f"{out_size}, but its type {node.inputs[k].type} does not declare that dimension "
                        "broadcastable. Declare it: T.row/T.col (or T.tensor(dtype, broadcastable=...)), "
                        "shared(value, broadcastable=(True, False)), or x.dimshuffle('x', ...). coursekit, like "
                        "Theano, needs this so that gradients come back with the input's shape.")

    return check


# ------------------------------------------------------------------ generated thunks
def _factory(case, pattern):
    key = (case, pattern)
    factory = _FACTORIES.get(key)
    if factory is None:
        ns = {"ndarray": np.ndarray, "asarray": np.asarray}
        exec(compile(_source(case, pattern), f"<elementwise thunk {case} {''.join(map(str, pattern))}>", "exec"), ns)
        factory = _FACTORIES[key] = ns["factory"]
    return factory


def _source(case, pattern):
    """The factory's source: ``factory(fn, cell, [general | check, fits,] *cells)`` returning ``thunk()``.
    (NumPy's names are the factory's defaults, so the thunk reads them as closure cells, not globals.)"""
    n = len(pattern) if case == "wide" else pattern[0]
    cells = ", ".join(f"c{k}" for k in range(n))
    args = ", ".join(f"x{k}" for k in range(n))
    read = [f"        x{k} = c{k}[0]" for k in range(n)]
    if case == "zero_d":
        body = [f"        cell[0] = asarray(fn({', '.join(f'c{k}[0][()]' for k in range(n))}))"]
        head = f"def factory(fn, cell, {cells}, asarray=asarray):"
    elif case == "general":
        head = f"def factory(impl, cell, check, fits, {cells}, ndarray=ndarray, asarray=asarray):"
        if n == 1:
            same = "out.shape == x0.shape"
        else:
            same = " == ".join(["out.shape"] + [f"getattr(x{k}, 'shape', ())" for k in range(n)])
            same = f"({same} or fits(out.shape, ({args},), check))"
        body = read + ["        out = cell[0]",
                       f"        if type(out) is ndarray and {same}:",
                       f"            cell[0] = impl({args}, out=out)",
                       "            return",
                       f"        r = impl({args})",
                       "        if type(r) is not ndarray:  # a ufunc gives 0-d inputs a NumPy scalar",
                       "            r = asarray(r)",
                       "        cell[0] = r"]
        if n > 1:
            differs = " or ".join(f"getattr(x{k}, 'shape', ()) != r.shape" for k in range(n))
            body += [f"        if {differs}:", f"            check(({args},), r.shape)"]
    elif case == "loop":
        head = f"def factory(loop, cell, general, {cells}):"
        body = ["        try:", f"            cell[0] = loop({', '.join(f'c{k}[0]' for k in range(n))}, cell[0])",
                "        except ValueError:  # lengths differ (broadcasting) or bad input: the general path says",
                "            general()"]
    else:  # wide
        head = f"def factory(impl, cell, general, {cells}, ndarray=ndarray, asarray=asarray):"
        wide = [k for k, kind in enumerate(pattern) if kind == "w"]
        same = " and ".join(f"x{k}.shape == s" for k in wide[1:]) or "True"
        body = ["        try:",
                *[f"            x{k} = c{k}[0]" + (".reshape(())" if kind == "n" else "") for k, kind in enumerate(pattern)],
                "        except (ValueError, AttributeError):  # not length 1 (or not an array): the general path says",
                "            return general()",
                f"        s = x{wide[0]}.shape",
                f"        if not ({same}):",
                "            return general()",
                "        out = cell[0]",
                "        if type(out) is ndarray and out.shape == s:",
                f"            cell[0] = impl({args}, out=out)",
                "        else:",
                f"            r = impl({args})",
                "            cell[0] = r if type(r) is ndarray else asarray(r)"]
    return "\n".join([head, "    def thunk():", *body, "    return thunk"]) + "\n"
