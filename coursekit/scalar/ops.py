"""Scalar operations: what one element of an elementwise op does.

Each :class:`ScalarOp` bundles three views of the same function:

* ``impl`` — the NumPy implementation over whole arrays (usually a ufunc,
  so it can write into an ``out=`` buffer);
* ``grad`` — the symbolic derivative, written with tensor operations;
* ``c_expr`` — a C/CUDA expression template, used when a fused chain of
  elementwise ops is compiled into one GPU kernel.  It must mean what the
  NumPy impl means on every dtype: where C differs (``//`` and ``%`` truncate
  in C, integer ``/`` is integer division, division by zero traps, max/min
  drop NaN) it calls a ``ck_*`` helper from ``cuda_codegen.py``'s PRELUDE,
  and ``tests/scalar/test_scalar_c_expressions.py`` runs every expression against
  the impl.

Output dtypes are not written down by hand: they are whatever NumPy produces
for arrays of the input dtypes, so coursekit follows NumPy 2's rules exactly.

Derivatives are tensor expressions, and tensors sit above this package: the
tensor layer hands its math module over once (:func:`use_tensor_math`), and
the gradient functions below receive it as ``M``.
"""
from __future__ import annotations

import operator
import re

import numpy as np

from .. import wiring

_DTYPE_CACHE: dict = {}
# C math functions with no integer overload in CUDA: nvcc and NVRTC reject exp(int) (g++ accepts it, so
# only a real GPU would notice). An integer or bool argument is converted to the op's float result type
# first, which is what NumPy's loops do too (exp of int32 computes in float64, of int16 in float32).
_REAL_MATH_CALL = re.compile(r"\b(?:exp|exp2|expm1|log|log1p|log2|log10|tanh|sinh|cosh|sqrt|sin|cos|tan|asin|acos|atan"
                             r"|atan2|erf|erfc|floor|ceil|round|rint|trunc)\(")


class ScalarOp:
    """One elementwise function, known by what it computes (see :meth:`key`), never by its name alone.

    An ``impl`` that takes ``out=`` must work when ``out`` is one of its own
    inputs (fused code reuses dead buffers): read every input before the first
    write into ``out``.
    """

    def __init__(self, name, nin, impl, grad=None, c_expr=None, uses_output=False):
        self.name, self.nin, self.impl = name, nin, impl
        self.grad_fn, self.c_expr, self.uses_output = grad, c_expr, uses_output
        self.is_ufunc = isinstance(impl, np.ufunc)

    def key(self):
        """What makes two ops one: the same name, arity, implementation, gradient and C expression.

        Functions compare as objects, so a notebook cell that defines an op, is corrected and is run
        again makes a *different* op of the same name: graphs holding both keep both (merge does not
        fold them into one node), and each gets its own output dtypes and compiled kernels.
        Subclasses whose parameters say everything (``Cast``, ``Composite``) return those.
        """
        return (self.name, self.nin, self.impl, self.grad_fn, self.c_expr, self.uses_output)

    def uses(self, op) -> bool:
        """Does this op compute with ``op`` (itself; a fused Composite: any of its steps)?"""
        return self is op

    def c_call(self, args, dtypes):
        """``c_expr`` over the C expressions ``args`` of the given dtypes (see _REAL_MATH_CALL for casts)."""
        if _REAL_MATH_CALL.search(self.c_expr) and any(np.dtype(d).kind in "iub" for d in dtypes):
            real = np.dtype(self.output_dtype(*dtypes))
            real = c_type(real if real.kind == "f" else np.float64)       # ceil(int) is an int: compute in double
            args = [f"(({real}){a})" if np.dtype(d).kind in "iub" else a for a, d in zip(args, dtypes)]
        return self.c_expr.format(*args)

    def __reduce__(self):
        """Pickle a registered op by its name: its impl and gradient are closures that pickle cannot store."""
        if _OPS.get(self.name) is self:
            return (get, (self.name,))
        return super().__reduce__()

    def __eq__(self, other):
        return type(self) is type(other) and self.key() == other.key()

    def __hash__(self):
        return hash((type(self), self.key()))

    def __str__(self):
        return self.name

    __repr__ = __str__

    def output_dtype(self, *dtypes):
        """The dtype NumPy gives for arrays of these dtypes (cached)."""
        key = (self.key(), dtypes)
        if key not in _DTYPE_CACHE:
            probes = [np.ones(1, dtype=d) for d in dtypes]
            with np.errstate(all="ignore"):
                _DTYPE_CACHE[key] = np.asarray(self.impl(*probes)).dtype.name
        return _DTYPE_CACHE[key]

    def grad(self, inputs, output, gz):
        if self.grad_fn is None:
            raise NotImplementedError(f"the elementwise op {self.name} has no gradient")
        return self.grad_fn(inputs, output, gz)


class Cast(ScalarOp):
    """Convert to a dtype (``T.cast(x, 'float32')``)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype).name
        super().__init__(f"cast{{{self.dtype}}}", 1, self._cast, grad=self._grad,
                         c_expr=f"({_C_TYPES.get(self.dtype, self.dtype)})({{0}})")

    def key(self):
        return ("cast", self.dtype)

    def __reduce__(self):
        return (Cast, (self.dtype,))

    def _cast(self, x, out=None):
        if out is not None:
            np.copyto(out, x, casting="unsafe")
            return out
        return np.asarray(x).astype(self.dtype)

    def output_dtype(self, *dtypes):
        return self.dtype

    @staticmethod
    def _grad(inputs, output, gz):
        (x,) = inputs
        if x.type.dtype[0] not in "fc":
            # int -> float: the float function of x is defined between integers, so gz flows on (Theano's
            # contract; it reaches an integer variable only under config.integer_grad='theano')
            return [gz] if output.type.dtype[0] in "fc" else [_math().zeros_like(x)]
        M = _math()
        if output.type.dtype[0] not in "fc":
            # float -> int/bool rounds: piecewise constant, so zero (like floor), never gz passed through
            return [M.zeros_like(x)]
        return [M.cast(gz, x.type.dtype)]


_C_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long",
            "int8": "signed char", "uint8": "unsigned char", "int16": "short", "bool": "bool",
            "float16": "__half", "uint32": "unsigned int", "uint64": "unsigned long long"}


def c_type(dtype):
    return _C_TYPES[np.dtype(dtype).name]


# ------------------------------------------------------------------ impls
def sigmoid_impl(x, out=None):
    """1 / (1 + exp(-x)) computed as 0.5 * tanh(x / 2) + 0.5.

    It never overflows (tanh saturates at +-1) and is about 3x faster than the
    logaddexp form in NumPy; its absolute error is at float32 rounding level
    (<= 6e-8).  Where the *logarithm* of a sigmoid is needed, the stabilize
    rewrites use softplus instead, so the tiny values in the far negative tail
    never need to be accurate in relative terms.
    """
    half = _HALF.get(getattr(x, "dtype", None), 0.5)
    out = np.multiply(x, half, out=out)
    if type(out) is not np.ndarray:  # a 0-d input gives a NumPy scalar
        return 0.5 * np.tanh(out) + 0.5
    np.tanh(out, out=out)
    np.multiply(out, half, out=out)
    np.add(out, half, out=out)
    return out


# 0.5 as a 0-d array of the input's float type: the same result as the Python float (which takes the
# array's type too), but a ufunc call with it costs ~0.3 us less on small arrays (W3)
_HALF = {np.dtype(t): np.array(0.5, t) for t in ("float16", "float32", "float64")}


def softplus_impl(x, out=None):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): never overflows, and in NumPy about
    twice as fast as logaddexp(0, x) (five SIMD ufuncs beat one slow special function)."""
    if np.asarray(x).dtype.kind not in "fc":  # integers: compute in the float type NumPy's exp gives them
        x = np.asarray(x, dtype=np.exp(np.zeros(1, np.asarray(x).dtype)).dtype)
    positive_part = np.maximum(x, 0)  # read x before writing: ``out`` may be x itself (fused code reuses buffers)
    t = np.abs(x, out=out)
    if type(t) is not np.ndarray:  # a 0-d input gives a NumPy scalar
        return positive_part + np.log1p(np.exp(-t))
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    t += positive_part
    return t


def relu_impl(x, out=None):
    return np.maximum(x, 0, out=out)


def switch_impl(cond, a, b, out=None):
    result = np.where(cond, a, b)
    if out is not None:
        out[...] = result
        return out
    return result


def second_impl(a, b, out=None):
    """``b`` broadcast to the shape of ``a`` (and ``b``): Theano's ``second``.

    Like a ufunc, it refuses an ``out`` of another shape (a fused kernel reusing a smaller
    temporary counts on that ValueError; ``out[...] = b`` alone would fill the small buffer)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    if out is None:
        out = np.empty(shape, dtype=np.result_type(b))
    elif out.shape != shape:
        raise ValueError(f"second: an output of shape {out.shape} cannot hold the result's shape {shape}")
    out[...] = b
    return out


def identity_impl(x, out=None):
    if out is not None:
        np.copyto(out, x)
        return out
    return np.array(x, copy=True)


# ----------------------------------------------------------------- grads
_TENSOR_MATH: list = []  # [coursekit.tensor.math], set by use_tensor_math when the tensor layer loads


def use_tensor_math(module):
    """Called once by :mod:`coursekit.tensor.math` (which sits above): derivatives are written with it."""
    _TENSOR_MATH[:] = [module]


def _math():
    if not _TENSOR_MATH:
        raise RuntimeError("scalar op gradients need coursekit.tensor (import coursekit.tensor first)")
    return _TENSOR_MATH[0]


def _g(fn):
    """A gradient written as ``fn(M, inputs, output, gz)``, where ``M`` is the tensor math module."""
    def grad(inputs, output, gz):
        return fn(_math(), inputs, output, gz)
    return grad


def zero_grads(inputs, output, gz):
    """A step function of its inputs (integer ones too: Theano's contract makes them zero, not disconnected)."""
    zeros_like = _math().zeros_like
    return [zeros_like(i) for i in inputs]


_OPS: dict[str, ScalarOp] = {}


def _def(name, nin, impl, grad=None, c=None, uses_output=False):
    _OPS[name] = ScalarOp(name, nin, impl, grad, c, uses_output)


_def("add", 2, np.add, _g(lambda M, i, z, g: [g, g]), "({0} + {1})")
_def("sub", 2, np.subtract, _g(lambda M, i, z, g: [g, -g]), "({0} - {1})")
_def("mul", 2, np.multiply, _g(lambda M, i, z, g: [g * i[1], g * i[0]]), "({0} * {1})")
_def("true_div", 2, np.true_divide, _g(lambda M, i, z, g: [g / i[1], -g * i[0] / (i[1] * i[1])]), "ck_truediv({0}, {1})")
_def("int_div", 2, np.floor_divide, zero_grads, "ck_floordiv({0}, {1})")
_def("mod", 2, np.mod, _g(lambda M, i, z, g: [g, -g * M.floor(i[0] / i[1])]), "ck_mod({0}, {1})")
_def("pow", 2, np.power,
     _g(lambda M, i, z, g: [g * i[1] * i[0] ** (i[1] - 1), g * z * M.log(i[0])]), "ck_pow({0}, {1})", True)
_def("neg", 1, np.negative, _g(lambda M, i, z, g: [-g]), "(-{0})")
_def("exp", 1, np.exp, _g(lambda M, i, z, g: [g * z]), "exp({0})", True)
_def("log", 1, np.log, _g(lambda M, i, z, g: [g / i[0]]), "log({0})")
_def("log1p", 1, np.log1p, _g(lambda M, i, z, g: [g / (1 + i[0])]), "log1p({0})")
_def("expm1", 1, np.expm1, _g(lambda M, i, z, g: [g * (z + 1)]), "expm1({0})", True)
_def("tanh", 1, np.tanh, _g(lambda M, i, z, g: [g * (1 - z * z)]), "tanh({0})", True)
_def("sqrt", 1, np.sqrt, _g(lambda M, i, z, g: [g * 0.5 / z]), "sqrt({0})", True)
_def("sqr", 1, np.square, _g(lambda M, i, z, g: [g * 2 * i[0]]), "({0} * {0})")
_def("abs", 1, np.abs, _g(lambda M, i, z, g: [g * M.sgn(i[0])]), "ck_abs({0})")
_def("sgn", 1, np.sign, zero_grads, "ck_sign({0})")
_def("sin", 1, np.sin, _g(lambda M, i, z, g: [g * M.cos(i[0])]), "sin({0})")
_def("cos", 1, np.cos, _g(lambda M, i, z, g: [-g * M.sin(i[0])]), "cos({0})")
_def("floor", 1, np.floor, zero_grads, "floor({0})")
_def("ceil", 1, np.ceil, zero_grads, "ceil({0})")
_def("sigmoid", 1, sigmoid_impl, _g(lambda M, i, z, g: [g * z * (1 - z)]), "(1 / (1 + exp(-{0})))", True)
_def("softplus", 1, softplus_impl, _g(lambda M, i, z, g: [g * M.sigmoid(i[0])]),
     "({0} > 30 ? {0} : log1p(exp({0})))")
_def("relu", 1, relu_impl, _g(lambda M, i, z, g: [M.switch(i[0] > 0, g, 0)]), "(({0} > 0 || {0} != {0}) ? {0} : 0)")
_def("maximum", 2, np.maximum,
     _g(lambda M, i, z, g: [M.switch(i[0] >= i[1], g, 0), M.switch(i[0] >= i[1], 0, g)]), "max({0}, {1})")
_def("minimum", 2, np.minimum,
     _g(lambda M, i, z, g: [M.switch(i[0] <= i[1], g, 0), M.switch(i[0] <= i[1], 0, g)]), "min({0}, {1})")
_def("switch", 3, switch_impl,
     _g(lambda M, i, z, g: [None, M.switch(i[0], g, 0), M.switch(i[0], 0, g)]), "({0} ? {1} : {2})")
_def("second", 2, second_impl, _g(lambda M, i, z, g: [None, g]), "({1})")
_def("identity", 1, identity_impl, _g(lambda M, i, z, g: [g]), "({0})")
for _name, _uf, _c in [("gt", np.greater, ">"), ("lt", np.less, "<"), ("ge", np.greater_equal, ">="),
                       ("le", np.less_equal, "<="), ("eq", np.equal, "=="), ("neq", np.not_equal, "!=")]:
    _def(_name, 2, _uf, zero_grads, f"({{0}} {_c} {{1}})")
_def("and_", 2, np.bitwise_and, zero_grads, "({0} & {1})")
_def("or_", 2, np.bitwise_or, zero_grads, "({0} | {1})")
_def("invert", 1, np.invert, zero_grads, "ck_invert({0})")


def get(name) -> ScalarOp:
    return _OPS[name]


_TABLE = frozenset(_OPS)   # the names above: rewrites, numba loops and fast paths know these ops by name


def register(op, replace=False) -> ScalarOp:
    """Make ``op`` known by its name (``get(name)``, and graphs using it pickle by name); returns the op.

    One name, one op. Registering an op again (or an equal one) returns the registered op; a
    *different* op under a taken name is refused, because a re-run notebook cell with a corrected op
    would otherwise silently get the old one back. ``replace=True`` gives the name to ``op``: ``get``
    and pickles made from now on find it, the output dtypes and compiled CUDA kernels cached for the
    old op are dropped, and graphs already built keep the op they were built with.
    """
    registered = _OPS.setdefault(op.name, op)
    if registered == op:
        return registered
    if not replace:
        raise ValueError(
            f"register: a different scalar op named {op.name!r} is registered already (impl {_describe(registered)},"
            f" new impl {_describe(op)}). To replace it (a corrected op, a re-run cell), call "
            f"register(op, replace=True); graphs built with the old op keep it. Or give the new op another name.")
    if op.name in _TABLE:
        raise ValueError(f"register: {op.name!r} is one of coursekit's own scalar ops (rewrites and kernels "
                         "recognise it by name), so it cannot be replaced: give your op another name")
    _forget(registered)
    _OPS[op.name] = op
    return op


def _describe(op):
    impl = getattr(op.impl, "__qualname__", None) or repr(op.impl)
    return f"{impl}, C {op.c_expr!r}" if op.c_expr else impl


def _forget(op):
    """Drop what is cached for ``op``: its output dtypes here, its CUDA kernels on every device."""
    for key in [key for key in _DTYPE_CACHE if key[0] == op.key()]:
        del _DTYPE_CACHE[key]
    wiring.get("forget_scalar_op")(op)


def all_names():
    return sorted(_OPS)


# Ops whose Python operator on NumPy scalars gives exactly the ufunc's result (same dtype rules,
# same IEEE arithmetic and warnings), at a tenth of a ufunc call's cost on 0-d values (W2).
SCALAR_OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "true_div": operator.truediv,
                    "neg": operator.neg}
