"""``ifelse(cond, then_branch, else_branch)``: a *lazy* choice (Theano's ``theano.ifelse.ifelse``).

``T.switch(cond, a, b)`` is elementwise and computes both ``a`` and ``b``;
``ifelse`` takes a scalar condition and computes only the chosen branch.
To make that possible here, the two branches' graphs are moved *inside* the
IfElse op (each compiled into its own inner function, like scan's step):
the op's inputs are the condition and the values the branches start from, and
at run time it evaluates the condition and runs one inner function.  A value
*both* branches read is computed outside, once, as Theano's lazy evaluation
did (whichever branch runs needs it): so a branch holds only its own work, and
stacked choices (Keras puts one in every BatchNormalization layer) do not nest
every earlier layer inside every later branch, which made their gradient
exponential in the depth.  A value only one branch reads is computed inside it.

On a GPU device the op runs as ``GpuIfElse`` (its twin, made by
:func:`~coursekit.devices.gpu_ops.gpu_twin`): the condition is read on the
host, and each branch is compiled for the device, so the chosen branch's
values stay in device memory.
"""
from __future__ import annotations

import itertools

from .compile.function import function
from .compile.io import Out
from .config import config
from .devices.transfer import gpu_from_host, host_from_gpu
from .devices.types import GpuArrayType
from .gradient import grad
from .graph import Apply, Constant, clone_replace
from .tensor.math import zeros_like
from .tensor.type import TensorType
from .tensor.var import as_tensor_variable
from .tensor.xpop import XpOp

_IDS = itertools.count()


class IfElse(XpOp):
    """Evaluate the condition, then only the chosen branch's inner function."""
    verified_outputs = True

    __props__ = ("uid",)
    fold_constants = False
    gpu_name = "GpuIfElse"
    host_inputs = (0,)  # the condition: one scalar, read on the host to choose the branch

    def __init__(self, inner_inputs, then_outputs, else_outputs, name=None):
        self.inner_inputs = list(inner_inputs)
        self.then_outputs, self.else_outputs = list(then_outputs), list(else_outputs)
        self.name = name
        self.uid = next(_IDS)
        self.fns = None
        self.device_fns = {}

    # each loop/branch is its own op (its inner graph is its identity), also after unpickling
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __getstate__(self):
        """Pickled without the compiled inner function(s): they are compiled again on first use."""
        state = dict(self.__dict__)
        state["fns"], state["device_fns"] = None, {}
        return state

    def __str__(self):
        return f"IfElse{{{self.name}}}" if self.name else "IfElse"

    def make_node(self, cond, *leaves):
        outs = [TensorType(a.type.dtype, tuple(x and y for x, y in zip(a.type.broadcastable, b.type.broadcastable)))
                for a, b in zip(self.then_outputs, self.else_outputs)]
        return Apply(self, [cond, *leaves], [t.make_variable() for t in outs])

    def _compile(self):
        if self.fns is None:
            with config.change(device="cpu"):
                self.fns = [function(self.inner_inputs, [Out(v, borrow=False) for v in outs],
                                     on_unused_input="ignore", trust_input=True, name=f"{self} ({which} branch)")
                            for which, outs in (("then", self.then_outputs), ("else", self.else_outputs))]
        return self.fns

    def _compile_on(self, device):
        """Both branches compiled for ``device``: device arrays in, device arrays out (placement lifts the
        branches' ops and cuts the transfers at their borders, as for scan's step)."""
        if device.name not in self.device_fns:
            ins = [GpuArrayType(v.type.dtype, v.type.broadcastable, device).make_variable(v.name)
                   for v in self.inner_inputs]
            with config.change(device=device.name):
                self.device_fns[device.name] = [
                    function(ins, [Out(gpu_from_host(o), borrow=False) for o in
                                   clone_replace(outs, dict(zip(self.inner_inputs, map(host_from_gpu, ins))))[0]],
                             on_unused_input="ignore", trust_input=True, name=f"{self} ({which} branch, {device.name})")
                    for which, outs in (("then", self.then_outputs), ("else", self.else_outputs))]
        return self.device_fns[device.name]

    def run(self, xp, inputs, output_storage):
        then_fn, else_fn = self._compile()
        cond, *leaves = inputs
        values = (then_fn if bool(cond) else else_fn)(*leaves)
        for cell, value in zip(output_storage, values):
            cell[0] = value

    def device_kernel(self, device, node):
        """The GPU twin's kernel: ``xp`` arrays in and out, the chosen branch run on ``device``."""
        then_fn, else_fn = self._compile_on(device)
        wrap, unwrap = device.wrap, device.unwrap

        def run_branch(inputs, output_storage):
            cond, *leaves = inputs
            values = (then_fn if bool(cond) else else_fn)(*map(wrap, leaves))
            for cell, value in zip(output_storage, values):
                cell[0] = unwrap(value)

        return run_branch

    def L_op(self, inputs, outputs, output_grads):
        cond, *leaves = inputs
        replace = dict(zip(self.inner_inputs, leaves))
        float_inner = [v for v in self.inner_inputs if v.type.dtype[0] in "fc"]

        def branch_grads(outs):
            # differentiated inside, where the inputs are independent leaves (an input may be computed from
            # another outside), then written in the outer variables
            known = {o: g for o, g in zip(outs, output_grads) if o.type.dtype[0] in "fc"}
            if not known:
                return [zeros_like(replace[v]) for v in float_inner]
            return clone_replace(grad(None, float_inner, known_grads=known, disconnected_inputs="ignore"), replace)[0]

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
    leaves = _branch_starts(then_list, else_list)
    inner = [v.type.host_type().make_variable(v.name) if hasattr(v.type, "host_type") else v.type.make_variable(v.name)
             for v in leaves]
    replace = dict(zip(leaves, inner))
    then_inner, _ = clone_replace(then_list, replace)
    else_inner, _ = clone_replace(else_list, replace)
    outs = IfElse(inner, then_inner, else_inner, name)(condition, *leaves)
    outs = outs if isinstance(outs, list) else [outs]
    return outs[0] if single else outs


def _ancestors(outputs):
    """{id: variable} of ``outputs`` and everything they are computed from."""
    seen, stack = {}, list(outputs)
    while stack:
        v = stack.pop()
        if id(v) not in seen:
            seen[id(v)] = v
            stack.extend(v.owner.inputs if v.owner is not None else ())
    return seen


def _branch_starts(then_list, else_list):
    """The values the branches are computed from: walking up from each branch's outputs, the first value
    both branches read (computed outside the op, once), or a leaf; constants stay inside."""
    common = _ancestors(then_list).keys() & _ancestors(else_list).keys()
    starts, seen, stack = {}, set(), list(reversed(then_list + else_list))
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in common or v.owner is None:
            if not isinstance(v, Constant):
                starts[id(v)] = v
        else:
            stack.extend(reversed(v.owner.inputs))
    return list(starts.values())
