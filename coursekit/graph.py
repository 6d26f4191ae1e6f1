"""The graph: variables, the ops that combine them, and the Apply nodes between.

A symbolic expression such as ``exp(x) + 1`` is a bipartite graph::

    x ──► Apply(Elemwise{exp}) ──► exp(x) ──► Apply(Elemwise{add}) ──► out
                                     1 ───────┘

* a :class:`Variable` is a value-to-be (it has a :class:`Type`, and an
  ``owner`` Apply if some op computes it);
* an :class:`Op` is a *kind* of computation (``exp``, ``dot``);
* an :class:`Apply` is one use of an op on particular inputs.

Two ops are equal when they are of the same class with equal ``__props__``;
that equality is what lets the merge rewrite see that two nodes compute the
same thing.  Every variable remembers the user's line that created it
(``var.tag.trace``) so that errors can point back at the student's code.
"""
from __future__ import annotations

import linecache
import os
import sys
from types import SimpleNamespace

from . import wiring
from .config import config as _config

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


_OP_METHODS = frozenset({"make_node", "__call__", "grad", "L_op", "perform", "make_thunk", "gpu_perform"})


def user_trace():
    """(filename, lineno) of the innermost frame outside coursekit itself.

    A user's own Op subclass is "outside coursekit" too, but its methods are
    plumbing: the interesting line is where the op was *applied*, so frames of
    Op methods are skipped as well.
    """
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not filename.startswith(_PACKAGE_DIR) and not filename.startswith("<frozen"):
            if not (code.co_name in _OP_METHODS and isinstance(frame.f_locals.get("self"), Op)):
                return (filename, frame.f_lineno)
        frame = frame.f_back
    return None


def warn_at_user_line(message, category=UserWarning):
    """Warn pointing at the user's line rather than at coursekit's own code."""
    import warnings

    trace = user_trace()
    if trace is None:
        warnings.warn(message, category, stacklevel=3)
        return
    warnings.warn_explicit(message, category, trace[0], trace[1])


def format_trace(trace):
    """Render a trace as 'File "x.py", line 3: y = T.exp(x)'."""
    if not trace:
        return "(creation line unknown)"
    filename, lineno = trace
    text = linecache.getline(filename, lineno).strip()
    where = f'File "{filename}", line {lineno}'
    return f"{where}: {text}" if text else where


class Type:
    """What a variable may hold.  Subclasses define ``filter`` and equality."""

    def filter(self, value, strict=False, allow_downcast=None):
        raise NotImplementedError

    def make_variable(self, name=None):
        return Variable(self, name=name)

    def __call__(self, name=None):
        """A new variable of this type (Theano's ``x.type()`` idiom)."""
        return self.make_variable(name)


class Variable:
    """A node of the graph standing for a value (known later, or constant)."""

    __array_priority__ = 1000  # so that ndarray <op> Variable defers to us

    def __init__(self, type, owner=None, index=None, name=None):
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self.tag = SimpleNamespace(trace=user_trace())

    def clone(self):
        """A new variable of the same type and name, with no owner."""
        cp = self.__class__(self.type, None, None, self.name)
        cp.tag = SimpleNamespace(**vars(self.tag))
        return cp

    def __str__(self):
        if self.name is not None:
            return self.name
        if self.owner is not None:
            op = self.owner.op
            if len(self.owner.outputs) == 1:
                return f"{op}.0"
            return f"{op}.{self.index}"
        return f"<{self.type}>"

    __repr__ = __str__

    def eval(self, inputs_to_values=None):
        """Compile and evaluate this variable (a convenience, as in Theano)."""
        inputs_to_values = inputs_to_values or {}
        inputs = list(inputs_to_values)
        fn = wiring.get("compile_function")(inputs, self, on_unused_input="ignore")
        return fn(*[inputs_to_values[v] for v in inputs])


class Constant(Variable):
    """A variable whose value is fixed when the graph is built."""

    def __init__(self, type, data, name=None):
        super().__init__(type, None, None, name)
        self.data = type.filter(data, strict=False, allow_downcast=True)

    def signature(self):
        return (self.type, _data_key(self.data))

    def clone(self):
        return self

    def __str__(self):
        if self.name is not None:
            return self.name
        text = str(self.data)
        return text if len(text) <= 20 else text[:17] + "..."


def _data_key(data):
    """A hashable fingerprint of a constant's value (used by merge)."""
    try:
        return (data.dtype.str, data.shape, data.tobytes())
    except AttributeError:
        return repr(data)


class Apply:
    """One application of an op to input variables, producing outputs."""

    def __init__(self, op, inputs, outputs):
        self.op = op
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        for i, out in enumerate(self.outputs):
            if out.owner is not None and out.owner is not self:
                raise ValueError(f"output {i} of {op} already belongs to another Apply node")
            out.owner, out.index = self, i

    @property
    def out(self):
        if len(self.outputs) != 1:
            raise AttributeError(f"{self.op} has {len(self.outputs)} outputs; use .outputs")
        return self.outputs[0]

    @property
    def trace(self):
        return self.outputs[0].tag.trace if self.outputs else None

    def clone_with_new_inputs(self, inputs):
        """The same op applied to other inputs (types re-derived by make_node, unless every
        input has the type it had: then the outputs' types are the same too, and compiling a
        big graph does not pay for type inference twice)."""
        if len(inputs) == len(self.inputs) and all(a.type == b.type for a, b in zip(inputs, self.inputs)):
            return Apply(self.op, inputs, [o.clone() for o in self.outputs])
        node = self.op.make_node(*inputs)
        for old, new in zip(self.outputs, node.outputs):
            new.name = old.name
            new.tag.trace = old.tag.trace
        return node

    def __str__(self):
        return f"{self.op}({', '.join(map(str, self.inputs))})"

    __repr__ = __str__


class Op:
    """A kind of computation.  Subclasses define ``make_node`` and ``perform``.

    ``__props__`` names the attributes that define the op: ops of the same
    class with equal props are equal and hash alike (merge relies on it).
    ``device`` says where the op runs ("cpu" or "gpu"), and ``is_transfer``
    whether it copies between host and device; placement reads these
    attributes, never the class name.  ``view_map``/``destroy_map`` declare
    outputs that alias (view) or overwrite (destroy) inputs, so the compiler
    knows when it must copy.

    ``verified_outputs``: does this class's own code guarantee values of the
    output types ``make_node`` declares (its tests check it)?  Then the linker
    runs its thunk as it is; otherwise it checks every output's dtype, rank,
    broadcastable lengths and memory after each call.  The declaration is not
    inherited: a subclass (an op of one's own built on a library op) is
    checked until its own class body says ``verified_outputs = True``.
    """

    __props__ = ()
    device = "cpu"
    is_transfer = False
    verified_outputs = False
    view_map: dict = {}
    destroy_map: dict = {}

    def _props(self):
        return tuple(getattr(self, p) for p in self.__props__)

    def __eq__(self, other):
        return type(self) is type(other) and self._props() == other._props()

    def __hash__(self):
        return hash((type(self), self._props()))

    def __str__(self):
        if not self.__props__:
            return type(self).__name__
        return f"{type(self).__name__}{{{', '.join(str(p) for p in self._props())}}}"

    __repr__ = __str__

    def __call__(self, *inputs, **kwargs):
        node = self.make_node(*inputs, **kwargs)
        if _config.compute_test_value != "off":  # Theano's debugging aid: see coursekit/test_value.py
            wiring.get("compute_test_values")(node)
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def make_node(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__}.make_node")

    def perform(self, node, inputs, output_storage):
        """Compute outputs from input values: ``output_storage[i][0] = value``."""
        raise NotImplementedError(f"{type(self).__name__}.perform")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.verified_outputs = bool(cls.__dict__.get("verified_outputs", False))  # never inherited (see above)
        own = cls.__dict__.get("make_thunk")
        if own is not None and _theano_thunk_signature(own):
            cls.make_thunk = _adapt_theano_make_thunk(own)

    def make_thunk(self, node, storage_map, compute_map=None, no_recycling=None, impl=None):
        """A zero-argument callable computing ``node`` over its storage cells.

        The default calls ``perform``; ops override it for speed or to launch
        device kernels.  Theano's five-argument form ``make_thunk(node,
        storage_map, compute_map, no_recycling, impl)`` works too: an op that
        defines it is called with ``compute_map={}``, ``no_recycling=[]`` and
        ``impl=None`` (coursekit has no lazy evaluation and recycles nothing).
        """
        perform = self.perform
        in_cells = [storage_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]

        def thunk():
            perform(node, [c[0] for c in in_cells], out_cells)

        return thunk

    def grad(self, inputs, output_grads):
        raise NotImplementedError(
            f"{self} has no gradient defined. Implement {type(self).__name__}.grad(inputs, output_grads)."
        )

    def L_op(self, inputs, outputs, output_grads):
        return self.grad(inputs, output_grads)


def _theano_thunk_signature(fn):
    """Does this make_thunk need Theano's compute_map and no_recycling arguments?"""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())[1:]  # without self
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required) >= 4


def _adapt_theano_make_thunk(theano_make_thunk):
    """Call a Theano-style make_thunk: (node, storage_map, compute_map, no_recycling), and ``impl``
    where it takes one (Theano 0.7's signature, which the tutorial's PyCUDA op uses, has no ``impl``)."""
    import inspect

    params = list(inspect.signature(theano_make_thunk).parameters.values())[1:]
    takes_impl = len(params) >= 5 or any(p.kind is p.VAR_POSITIONAL for p in params)

    def make_thunk(self, node, storage_map, compute_map=None, no_recycling=None, impl=None):
        args = (node, storage_map, {} if compute_map is None else compute_map, [] if no_recycling is None else no_recycling)
        return theano_make_thunk(self, *args, impl) if takes_impl else theano_make_thunk(self, *args)

    make_thunk.__doc__ = theano_make_thunk.__doc__
    make_thunk.__wrapped__ = theano_make_thunk
    return make_thunk


# ---------------------------------------------------------------- traversal
def apply_nodes_between(inputs, outputs):
    """Apply nodes needed to compute ``outputs``, in topological order.

    Traversal stops at ``inputs`` (their owners are not visited).
    """
    stop = set(map(id, inputs))
    order, seen = [], set()
    stack = [(v, False) for v in reversed(list(outputs))]
    while stack:
        var, expanded = stack.pop()
        node = var.owner
        if node is None or id(var) in stop:
            continue
        if expanded:
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
            continue
        if id(node) in seen:
            continue
        stack.append((var, True))
        for inp in reversed(node.inputs):
            if inp.owner is not None and id(inp.owner) not in seen:
                stack.append((inp, False))
    return order


def graph_inputs(outputs, blockers=()):
    """Leaf variables (no owner, or in ``blockers``) reachable from outputs."""
    blockers = set(map(id, blockers))
    leaves, seen = [], set()
    stack = list(outputs)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v.owner is None or id(v) in blockers:
            leaves.append(v)
        else:
            stack.extend(v.owner.inputs)
    return leaves


def clone_replace(outputs, replace=None):
    """Copy the graph above ``outputs``; variables in ``replace`` are swapped.

    Leaves that are not replaced are kept as they are (shared variables and
    constants must stay the same objects, since their storage is shared).
    Returns the new outputs and the old-variable -> new-variable map.
    """
    memo = {id(k): v for k, v in (replace or {}).items()}
    for node in apply_nodes_between(list((replace or {}).keys()), outputs):
        new_inputs = [memo.get(id(i), i) for i in node.inputs]
        new_node = node.clone_with_new_inputs(new_inputs)
        for old, new in zip(node.outputs, new_node.outputs):
            memo[id(old)] = new
    return [memo.get(id(o), o) for o in outputs], memo
