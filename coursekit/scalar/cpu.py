"""A faster CPU thunk for elementwise nodes whose inputs the types already sort out.

Most elementwise nodes in a training step read arrays of one shape plus
*narrow* operands: one-element constants and scalars given axes by a
``DimShuffle{x}`` (the ``1/N`` of a mean's gradient, a bias ``b``).  The
types say which is which: an input with every dimension broadcastable has
length 1 everywhere, so it cannot set the result's shape, and an input with
some dimension not broadcastable (a *wide* one) must agree with the others.
So one comparison of the wide inputs' shapes replaces the general broadcast
check (``fits_buffer`` in :mod:`coursekit.tensor.elemwise`), and narrow inputs are
passed as 0-d arrays, which NumPy broadcasts about twice as fast as a (1,)
array (W3: ``mul(1/N, p - y)``).

The thunk is Python written for the node's pattern of inputs (one template per
pattern, compiled once), because a loop over the inputs costs more than the
arithmetic on the few hundred elements of W3.  Anything unusual (the wide
inputs' shapes differ, a narrow input is not length 1) goes to the general
thunk, which raises the clear errors.
"""
from __future__ import annotations

import numpy as np

_FACTORIES: dict = {}  # the pattern of inputs -> a function making the thunk


def pattern_of(node, cells):
    """Per input: 'w' (wide), 'n' (narrow, read as 0-d) or 'z' (already 0-d), or None when the
    fast thunk does not apply: a 0-d result, no wide input, or mixed dtypes (NumPy 1 casts a 0-d
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


def fast_thunk(kinds, impl, cells, out_cell, general):
    """The thunk for ``kinds`` (see :func:`pattern_of`); ``general`` handles what it does not."""
    factory = _FACTORIES.get(kinds)
    if factory is None:
        factory = _FACTORIES[kinds] = _write_factory(kinds)
    return factory(impl, general, np.ndarray, np.asarray, out_cell, *cells)


def _write_factory(kinds):
    names = [f"c{k}" for k in range(len(kinds))]
    reads = [f"x{k} = c{k}[0]" + (".reshape(())" if kind == "n" else "") for k, kind in enumerate(kinds)]
    wide = [k for k, kind in enumerate(kinds) if kind == "w"]
    args = ", ".join(f"x{k}" for k in range(len(kinds)))
    same = " and ".join(f"x{k}.shape == s" for k in wide[1:]) or "True"
    lines = [f"def factory(impl, general, ndarray, asarray, cell, {', '.join(names)}):",
             "    def thunk():",
             "        try:",
             *[f"            {r}" for r in reads],
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
             "            cell[0] = r if type(r) is ndarray else asarray(r)",
             "    return thunk"]
    ns = {}
    exec(compile("\n".join(lines) + "\n", f"<elementwise thunk {''.join(kinds)}>", "exec"), ns)
    return ns["factory"]
