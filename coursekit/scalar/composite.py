"""``Composite``: a fused chain of scalar ops, as one scalar op with a program.

The fusion rewrite (:mod:`coursekit.rewriting.fusion`) decides *which* ops
join; this module is what the group becomes: a little program over input
slots that writes itself as generated NumPy code (every intermediate result
in a buffer it owns), as Python operators on 0-d values, as one numba loop
(:mod:`.numba_kernels`), and as C statements, which
:mod:`.cuda_codegen` wraps into ONE CUDA kernel on a GPU.
"""
from __future__ import annotations

import numpy as np

from ..config import config
from . import numba_kernels
from .ops import SCALAR_OPERATORS, ScalarOp, c_type


def numba_wanted():
    """Does ``config.cpu_kernels`` ask for numba loops (read when a Composite is built)?"""
    return config.cpu_kernels == "numba"


class Composite(ScalarOp):
    """Several scalar ops as one: a little program over input slots.

    ``program`` is a tuple of steps ``(scalar_op, argument_refs, dtype)``
    where a ref is ``("in", i)`` (the i-th input), ``("const", i)`` (the
    i-th embedded constant) or ``("tmp", j)`` (the result of step j).
    """

    def __init__(self, program, constants, nin, input_dtypes=None, loop_modes=None, zero_d=False):
        self.program, self.constants = tuple(program), tuple(constants)
        self._n_inputs = nin
        self.input_dtypes = tuple(input_dtypes) if input_dtypes is not None else None
        numba = numba_wanted() and not zero_d  # 0-d chains: NumPy scalar operators beat any kernel call
        # the vector layout of the inputs (numba_kernels.loop_modes); only the numba path uses it
        self.loop_modes = loop_modes if numba and numba_kernels.supports_loop(self, loop_modes) else None
        self._key = ("composite", tuple((op.key(), refs, dtype) for op, refs, dtype in self.program),
                     tuple((c.dtype.str, c.shape, c.tobytes()) for c in self.constants), self.input_dtypes,
                     self.loop_modes)
        self._hash = hash((Composite, self._key))
        self._expr = self._describe()
        self.numpy_impl = self._generate()
        self.kernel = "numpy"
        impl = self.numpy_impl
        self.scalar_impl = self._scalar_program()  # 0-d values: NumPy scalar operators (None if some step has none)
        self.loop_impl = None  # strict(*inputs, out): the Elemwise thunk's fast path (numba_kernels.loop_wrapper)
        if self.loop_modes is not None:  # one vectorised loop, compiled on the first call
            impl, self.loop_impl = numba_kernels.loop_wrapper(self, self.input_dtypes, self.loop_modes,
                                                              self.numpy_impl)
            self.kernel = "numba-loop"
        elif numba and numba_kernels.supports(self, self.input_dtypes):
            impl = numba_kernels.compile_kernel(self, self.input_dtypes)  # a real ufunc: one loop, one pass
            self.kernel = "numba"
        super().__init__(f"Composite{{{self._expr}}}", nin, impl, c_expr=None)

    def key(self):
        return self._key

    def uses(self, op) -> bool:
        return self is op or any(step.uses(op) for step, _, _ in self.program)

    def output_dtype(self, *dtypes):
        """The last step's dtype (no probe call: a numba kernel compiles on its first call)."""
        return self.program[-1][2]

    def __hash__(self):  # the key is a long tuple, and merge hashes every node's op on every pass
        return self._hash

    # ---------------------------------------------------------------- text
    def _ref_text(self, ref, texts):
        kind, i = ref
        if kind == "in":
            return f"i{i}"
        if kind == "const":
            return str(self.constants[i].reshape(-1)[0])
        return texts[i]

    def _describe(self, limit=400):
        """``mul(exp(i0), 2.0)`` -- nested text while it stays short.  A step used twice is
        spelt out twice in nested text, so its length can grow exponentially in a DAG;
        past ``limit`` characters the text lists the steps instead (``t0=exp(i0); ...``)."""
        texts, lengths = [], []
        for op, refs, _ in self.program:
            size = len(op.name) + 2 + sum(lengths[i] + 2 if kind == "tmp" else 8 for kind, i in refs)
            lengths.append(size)
            if size > limit:
                break
            texts.append(f"{op.name}({', '.join(self._ref_text(r, texts) for r in refs)})")
        else:
            return texts[-1]
        steps = [f"{op.name}({', '.join(f't{i}' if k == 'tmp' else self._ref_text((k, i), ()) for k, i in refs)})"
                 for op, refs, _ in self.program]
        if len(steps) > 8:
            steps = steps[:3] + [f"... {len(steps) - 6} more ..."] + steps[-3:]
        return f"{len(self.program)} steps: " + "; ".join(steps)

    # --------------------------------------------------------- NumPy code
    def _generate(self):
        """Python source calling each step's NumPy impl, reusing dead temporaries.

        Past ``UNROLL_LIMIT`` steps the same plan runs as a loop instead
        (:func:`_run_plan`): compiling 10,000 lines of Python takes longer than running them.
        """
        last_use = {}
        for j, (_, refs, _) in enumerate(self.program):
            for r in refs:
                if r[0] == "tmp":
                    last_use[r[1]] = j
        if len(self.program) > UNROLL_LIMIT:
            return self._plan(last_use)
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
            if j == final:  # the caller's buffer first (Out(borrow=True) reuses it), else a dead temporary
                lines += ["    if out is not None:", "        try:", f"            return {call}, out=out)",
                          "        except (ValueError, TypeError):", "            pass"]
            if reusable:
                buf = f"t{reusable[0]}"
                lines += ["    try:", f"        t{j} = {call}, out={buf})",
                          "    except (ValueError, TypeError):  # shape grew, or a 0-d result", f"        t{j} = {call})"]
            else:
                lines.append(f"    t{j} = {call})")
        lines.append(f"    return t{final}")
        self.source = "\n".join(lines) + "\n"
        code = _CODE.get(self.source)
        if code is None:  # an MLP's layers fuse into equal programs: compile their text once
            code = _CODE[self.source] = compile(self.source, f"<fused {self._expr[:60]}>", "exec")
        exec(code, ns)
        return ns["fused"]

    def _plan(self, last_use):
        """The program as data for :func:`_run_plan`: slots are inputs, then constants, then steps."""
        n_in, n_const = self._n_inputs, len(self.constants)
        base = {"in": 0, "const": n_in, "tmp": n_in + n_const}
        dead_at = {}
        for tmp, j in last_use.items():
            dead_at.setdefault(j, []).append(base["tmp"] + tmp)
        plan = []
        for j, (op, refs, dtype) in enumerate(self.program):
            reusable = [i for kind, i in refs if kind == "tmp" and last_use.get(i) == j and self.program[i][2] == dtype]
            plan.append((op.impl, tuple(base[kind] + i for kind, i in refs),
                         base["tmp"] + reusable[0] if reusable else -1, tuple(dead_at.get(j, ()))))
        constants = [c.reshape(()) for c in self.constants]
        self.source = f"# {len(plan)} steps run by coursekit.scalar.composite._run_plan (too long to unroll)\n"
        return _run_plan(tuple(plan), constants, len(plan))

    def _scalar_program(self):
        """``f(i0, ...)`` on NumPy scalars with Python operators, for 0-d nodes: a ufunc call on 0-d
        values costs ten times the arithmetic.  Only steps whose operator gives exactly the ufunc's
        result (``scalar.ops.SCALAR_OPERATORS``, every operand already of the step's dtype)."""
        if self.input_dtypes is None or len(self.program) > UNROLL_LIMIT:
            return None
        dtype_of = {"in": lambda i: self.input_dtypes[i], "const": lambda i: self.constants[i].dtype.name,
                    "tmp": lambda i: self.program[i][2]}
        ns, lines = {}, [f"def scalar_fused({', '.join(f'i{i}' for i in range(self._n_inputs))}):"]
        for j, (op, refs, dtype) in enumerate(self.program):
            if op.name not in SCALAR_OPERATORS or dtype not in ("float32", "float64"):
                return None
            if any(dtype_of[kind](i) != dtype for kind, i in refs):
                return None
            names = []
            for kind, i in refs:
                if kind == "const":
                    ns[f"k{i}"] = self.constants[i].reshape(())[()]
                names.append({"in": "i", "const": "k", "tmp": "t"}[kind] + str(i))
            ns[f"op{j}"] = SCALAR_OPERATORS[op.name]
            lines.append(f"    t{j} = op{j}({', '.join(names)})")
        lines.append(f"    return t{len(self.program) - 1}")
        exec(compile("\n".join(lines) + "\n", f"<fused 0-d {self._expr[:60]}>", "exec"), ns)
        return ns["scalar_fused"]

    # ------------------------------------------------------------ C code
    def c_statements(self, input_names, input_dtypes):
        """C/CUDA for one element: one ``const`` temporary per step, so a result used twice is
        computed once.  Returns (lines, name of the final temporary)."""
        lines, temps = [], []
        for j, (op, refs, dtype) in enumerate(self.program):
            if op.c_expr is None:
                raise NotImplementedError(f"{op.name} has no C expression")
            args, arg_dtypes = [], []
            for kind, i in refs:
                if kind == "in":
                    args.append(input_names[i])
                    arg_dtypes.append(input_dtypes[i])
                elif kind == "const":
                    args.append(f"(({c_type(self.constants[i].dtype)}){c_literal(self.constants[i])})")
                    arg_dtypes.append(self.constants[i].dtype)
                else:
                    args.append(temps[i][0])
                    arg_dtypes.append(temps[i][1])
            name = f"t{j}"
            lines.append(f"const {c_type(dtype)} {name} = ({c_type(dtype)})({op.c_call(args, arg_dtypes)});")
            temps.append((name, dtype))
        return lines, temps[-1][0]

    def c_code(self, input_names, input_dtypes):
        """The whole chain as a single C expression (the statements' form is what kernels use)."""
        lines, final = self.c_statements(input_names, input_dtypes)
        return "[&]() { " + " ".join(lines) + f" return {final}; }}()"


UNROLL_LIMIT = 64
_CODE: dict = {}  # generated source -> code object


def _run_plan(plan, constants, n_steps):
    """A fused function that walks ``plan`` in a loop; dead temporaries are dropped as it goes."""
    def fused(*inputs, out=None):
        slots = [*inputs, *constants, *([None] * n_steps)]
        first_step = len(slots) - n_steps
        for j, (fn, args, reuse, dead) in enumerate(plan):
            values = [slots[i] for i in args]
            target = slots[reuse] if reuse >= 0 else None
            try:
                result = fn(*values) if target is None else fn(*values, out=target)
            except (ValueError, TypeError):  # shape grew, or a 0-d result
                result = fn(*values)
            for d in dead:
                slots[d] = None
            slots[first_step + j] = result
        result = slots[-1]
        if out is not None:
            try:
                np.copyto(out, result)
                return out
            except (ValueError, TypeError):
                pass
        return result
    return fused


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
