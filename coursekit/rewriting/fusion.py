"""Elementwise fusion: a chain of elementwise ops becomes one ``Composite`` op.

Unfused, ``sigmoid(x * w + b)`` is three nodes, three Python calls and two
temporary arrays.  Fused, it is one node whose implementation is generated
Python that calls the same NumPy ufuncs but writes every intermediate result
into a buffer it owns (``out=``), so no temporary is allocated after the
first.  On a GPU the same Composite becomes ONE generated CUDA kernel (its
``c_code``), which is where fusion really pays: one launch, one pass over
memory.

Why not numexpr?  Measured on this project's logistic-regression step the
arrays are small (hundreds of elements), where numexpr's per-call set-up
costs more than it saves; the generated NumPy code is also readable, which
this course values (``print(op.scalar_op.source)``).
"""
from __future__ import annotations

import numpy as np

from ..graph import Constant
from ..tensor.elemwise import Elemwise
from ..tensor.scalar import ScalarOp, c_type
from . import global_rewrite


class Composite(ScalarOp):
    """Several scalar ops as one: a little program over input slots.

    ``program`` is a tuple of steps ``(scalar_op, argument_refs, dtype)``
    where a ref is ``("in", i)`` (the i-th input), ``("const", i)`` (the
    i-th embedded constant) or ``("tmp", j)`` (the result of step j).
    """

    def __init__(self, program, constants, nin):
        self.program, self.constants = tuple(program), tuple(constants)
        self._n_inputs = nin
        self._expr = self._describe()
        super().__init__(f"Composite{{{self._expr}}}", nin, self._generate(), c_expr=None)

    def key(self):
        return ("composite", self._expr, tuple((c.dtype.str, c.tobytes()) for c in self.constants))

    # ---------------------------------------------------------------- text
    def _ref_text(self, ref, texts):
        kind, i = ref
        if kind == "in":
            return f"i{i}"
        if kind == "const":
            return str(self.constants[i].reshape(-1)[0])
        return texts[i]

    def _describe(self):
        texts = []
        for op, refs, _ in self.program:
            args = [self._ref_text(r, texts) for r in refs]
            texts.append(f"{op.name}({', '.join(args)})")
        return texts[-1]

    # --------------------------------------------------------- NumPy code
    def _generate(self):
        """Python source calling each step's NumPy impl, reusing dead temporaries."""
        last_use = {}
        for j, (_, refs, _) in enumerate(self.program):
            for r in refs:
                if r[0] == "tmp":
                    last_use[r[1]] = j
        args = ", ".join(f"i{i}" for i in range(self._n_inputs))
        lines = [f"def fused({args}, out=None):"]
        ns = {"np": np}
        final = len(self.program) - 1
        for j, (op, refs, dtype) in enumerate(self.program):
            ns[f"f{j}"] = op.impl
            names = []
            for r in refs:
                if r[0] == "const":  # 0-d: NumPy is faster with it, and another operand sets the shape
                    ns[f"k{r[1]}"] = self.constants[r[1]].reshape(())
                names.append({"in": "i", "const": "k", "tmp": "t"}[r[0]] + str(r[1]))
            call = f"f{j}({', '.join(names)}"
            # a temporary we own, read here for the last time, with this step's dtype, can take the result
            reusable = [r[1] for r in refs if r[0] == "tmp" and last_use.get(r[1]) == j
                        and self.program[r[1]][2] == dtype]
            if reusable:
                buf = f"t{reusable[0]}"
                lines += ["    try:", f"        t{j} = {call}, out={buf})",
                          "    except (ValueError, TypeError):  # shape grew, or a 0-d result", f"        t{j} = {call})"]
            elif j == final:
                lines += ["    if out is not None:", "        try:", f"            return {call}, out=out)",
                          "        except (ValueError, TypeError):", "            pass", f"    t{j} = {call})"]
            else:
                lines.append(f"    t{j} = {call})")
        lines.append(f"    return t{final}")
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, f"<fused {self._describe()[:60]}>", "exec"), ns)
        return ns["fused"]

    # ------------------------------------------------------------ C code
    def c_statements(self, input_names, input_dtypes):
        """C/CUDA for one element: one ``const`` temporary per step, so a result used twice is
        computed once.  Returns (lines, name of the final temporary)."""
        lines, temps = [], []
        for j, (op, refs, dtype) in enumerate(self.program):
            if op.c_expr is None:
                raise NotImplementedError(f"{op.name} has no C expression")
            args = []
            for kind, i in refs:
                if kind == "in":
                    args.append(input_names[i])
                elif kind == "const":
                    args.append(f"(({c_type(self.constants[i].dtype)}){c_literal(self.constants[i])})")
                else:
                    args.append(temps[i])
            name = f"t{j}"
            lines.append(f"const {c_type(dtype)} {name} = ({c_type(dtype)})({op.c_expr.format(*args)});")
            temps.append(name)
        return lines, temps[-1]

    def c_code(self, input_names, input_dtypes):
        """The whole chain as a single C expression (the statements' form is what kernels use)."""
        lines, final = self.c_statements(input_names, input_dtypes)
        return "[&]() { " + " ".join(lines) + f" return {final}; }}()"


def c_literal(array):
    """A C literal for a one-element array (``2.5``, ``-3``, ``true``, ``INFINITY``)."""
    value = array.reshape(-1)[0].item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if np.isnan(value):
            return "NAN"
        if np.isinf(value):
            return "INFINITY" if value > 0 else "-INFINITY"
        return repr(value)
    return str(value)


def _fusable(node):
    return (node is not None and isinstance(node.op, Elemwise) and node.op.device == "cpu"
            and node.op.scalar_op.name != "identity")


@global_rewrite("fusion", "fusion", "elemwise")
def fuse_elemwise(fgraph):
    """Fuse every maximal tree of CPU Elemwise nodes into one Composite node."""
    changes = 0
    for node in reversed(fgraph.toposort()):
        if node not in fgraph.apply_nodes or not _fusable(node):
            continue
        group = _grow_group(fgraph, node)
        if len(group) < 2:
            continue
        new_out = _build_composite(node, group)
        if new_out is None:
            continue
        fgraph.replace(node.outputs[0], new_out, reason="fusion")
        fgraph.rewrite_log.append(("fusion", "fuse_elemwise", f"{len(group)} ops -> {new_out.owner.op}"))
        changes += 1
    return changes


def _grow_group(fgraph, root):
    """The root plus every Elemwise producer that only feeds this group."""
    group, stack = {root}, [root]
    out_bcast = root.outputs[0].type.broadcastable
    while stack:
        node = stack.pop()
        for inp in node.inputs:
            producer = inp.owner
            if not _fusable(producer) or producer in group:
                continue
            clients = fgraph.clients.get(inp, [])
            if len(clients) != 1 or clients[0][0] == "output" or len(producer.outputs) != 1:
                continue
            if inp.type.ndim != len(out_bcast):
                continue
            group.add(producer)
            stack.append(producer)
    return group


def _build_composite(root, group):
    inputs, constants, program, slot = [], [], [], {}

    def ref(var):
        if var.owner in group:
            return ("tmp", slot[var.owner])
        if isinstance(var, Constant) and var.data.size == 1:
            return constant_ref(var.data)
        for i, known in enumerate(inputs):
            if known is var:
                return ("in", i)
        inputs.append(var)
        return ("in", len(inputs) - 1)

    def constant_ref(data):
        for i, c in enumerate(constants):
            if c.dtype == data.dtype and c.shape == data.shape and c.tobytes() == data.tobytes():
                return ("const", i)
        constants.append(data)
        return ("const", len(constants) - 1)

    def visit(node):
        for inp in node.inputs:
            if inp.owner in group and inp.owner not in slot:
                visit(inp.owner)
        outer_refs = [ref(i) for i in node.inputs]
        scalar_op = node.op.scalar_op
        if isinstance(scalar_op, Composite):  # inline an earlier fusion instead of nesting it
            base = len(program)
            for op, refs, dtype in scalar_op.program:
                program.append((op, tuple(outer_refs[i] if kind == "in" else
                                          constant_ref(scalar_op.constants[i]) if kind == "const" else
                                          ("tmp", base + i) for kind, i in refs), dtype))
        else:
            program.append((scalar_op, tuple(outer_refs), node.outputs[0].type.dtype))
        slot[node] = len(program) - 1

    visit(root)
    if not inputs:  # all constants: leave it to constant folding
        return None
    composite = Composite(program, constants, len(inputs))
    out = Elemwise(composite)(*inputs)
    if out.type != root.outputs[0].type:
        from ..tensor.math import cast

        out = cast(out, root.outputs[0].type.dtype) if out.type.dtype != root.outputs[0].type.dtype else out
    return out
