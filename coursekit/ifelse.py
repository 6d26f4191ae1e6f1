"""``ifelse(cond, then_branch, else_branch)``: a *lazy* choice (Theano's ``theano.ifelse.ifelse``).

``T.switch(cond, a, b)`` is elementwise and computes both ``a`` and ``b``;
``ifelse`` takes a scalar condition and computes only the chosen branch.
To make that possible here, the two branches' graphs are moved *inside* the
IfElse op (each compiled into its own inner function, like scan's step):
the op's inputs are the condition and the leaves the branches read, and at
run time it evaluates the condition and runs one inner function.  A value
both branches (or the rest of the graph) share is computed inside the branch
that needs it.
"""
from __future__ import annotations

import itertools

from .graph import Apply, Constant, Op, clone_replace, graph_inputs
from .tensor.type import TensorType
from .tensor.var import as_tensor_variable

_IDS = itertools.count()


class IfElse(Op):
    """Evaluate the condition, then only the chosen branch's inner function."""

    __props__ = ("uid",)
    fold_constants = False

    def __init__(self, inner_inputs, then_outputs, else_outputs, name=None):
        self.inner_inputs = list(inner_inputs)
        self.then_outputs, self.else_outputs = list(then_outputs), list(else_outputs)
        self.name = name
        self.uid = next(_IDS)
        self.fns = None

    # each loop/branch is its own op (its inner graph is its identity), also after unpickling
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __getstate__(self):
        """Pickled without the compiled inner function(s): they are compiled again on first use."""
        state = dict(self.__dict__)
        for key in ("fns",):
            state[key] = {} if key == "device_fns" else None
        return state

    def __str__(self):
        return f"IfElse{{{self.name}}}" if self.name else "IfElse"

    def make_node(self, cond, *leaves):
        outs = [TensorType(a.type.dtype, tuple(x and y for x, y in zip(a.type.broadcastable, b.type.broadcastable)))
                for a, b in zip(self.then_outputs, self.else_outputs)]
        return Apply(self, [cond, *leaves], [t.make_variable() for t in outs])

    def _compile(self):
        if self.fns is None:
            from .compile.function import function
            from .compile.io import Out
            from .config import config

            with config.change(device="cpu"):
                self.fns = [function(self.inner_inputs, [Out(v, borrow=False) for v in outs],
                                     on_unused_input="ignore", trust_input=True, name=f"{self} ({which} branch)")
                            for which, outs in (("then", self.then_outputs), ("else", self.else_outputs))]
        return self.fns

    def perform(self, node, inputs, output_storage):
        then_fn, else_fn = self._compile()
        cond, *leaves = inputs
        values = (then_fn if bool(cond) else else_fn)(*leaves)
        for cell, value in zip(output_storage, values):
            cell[0] = value

    def L_op(self, inputs, outputs, output_grads):
        from .gradient import grad
        from .tensor.math import zeros_like

        cond, *leaves = inputs
        replace = dict(zip(self.inner_inputs, leaves))
        float_leaves = [v for v in leaves if v.type.dtype[0] in "fc"]

        def branch_grads(outs):
            cloned, _ = clone_replace(outs, replace)
            known = {o: g for o, g in zip(cloned, output_grads) if o.type.dtype[0] in "fc"}
            return grad(None, float_leaves, known_grads=known, disconnected_inputs="ignore") if known else \
                [zeros_like(v) for v in float_leaves]

        chosen = ifelse(cond, branch_grads(self.then_outputs), branch_grads(self.else_outputs), name="grad")
        chosen = chosen if isinstance(chosen, list) else [chosen]
        it = iter(chosen)
        return [None] + [next(it) if v.type.dtype[0] in "fc" else None for v in leaves]


def ifelse(condition, then_branch, else_branch, name=None):
    """``then_branch`` if the scalar ``condition`` is true, else ``else_branch`` (each a variable or a list)."""
    single = not isinstance(then_branch, (list, tuple))
    then_list = [as_tensor_variable(v) for v in ([then_branch] if single else then_branch)]
    else_list = [as_tensor_variable(v) for v in ([else_branch] if single else else_branch)]
    condition = as_tensor_variable(condition)
    if condition.type.ndim != 0:
        raise TypeError(f"ifelse: the condition must be a scalar, got {condition} of type {condition.type}. For an "
                        "elementwise choice use T.switch(cond, a, b).")
    if len(then_list) != len(else_list):
        raise ValueError(f"ifelse: the then branch has {len(then_list)} value(s), the else branch {len(else_list)}")
    for k, (a, b) in enumerate(zip(then_list, else_list)):
        if a.type.dtype != b.type.dtype or a.type.ndim != b.type.ndim:
            raise TypeError(f"ifelse: value {k} is {a.type} in the then branch but {b.type} in the else branch; "
                            "both branches must give the same dtype and rank (cast one of them)")
    leaves = [v for v in graph_inputs(then_list + else_list) if not isinstance(v, Constant)]
    inner = [v.type.host_type().make_variable(v.name) if hasattr(v.type, "host_type") else v.type.make_variable(v.name)
             for v in leaves]
    replace = dict(zip(leaves, inner))
    then_inner, _ = clone_replace(then_list, replace)
    else_inner, _ = clone_replace(else_list, replace)
    outs = IfElse(inner, then_inner, else_inner, name)(condition, *leaves)
    outs = outs if isinstance(outs, list) else [outs]
    return outs[0] if single else outs
