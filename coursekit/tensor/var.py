"""Symbolic tensors: operator overloading and conversion of Python values.

``x + 1`` on a :class:`TensorVariable` builds a graph node instead of
computing anything.  Python numbers are *weak* (NumPy 2 rules): in
``float32_vector * 2.5`` the constant becomes float32, so the result stays
float32, just as ``np.float32 array * 2.5`` does in NumPy.
"""
from __future__ import annotations

import functools
import numbers

import numpy as np

from .. import wiring
from ..config import config
from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from ..graph import Constant, Variable
from .type import TensorType, _is_device_array


class _TensorMethods:
    """Operators and methods shared by tensor variables and constants."""

    # arithmetic -------------------------------------------------------
    def __add__(self, other): return _M().add(self, other)
    def __radd__(self, other): return _M().add(other, self)
    def __sub__(self, other): return _M().sub(self, other)
    def __rsub__(self, other): return _M().sub(other, self)
    def __mul__(self, other): return _M().mul(self, other)
    def __rmul__(self, other): return _M().mul(other, self)
    def __truediv__(self, other): return _M().true_div(self, other)
    def __rtruediv__(self, other): return _M().true_div(other, self)
    def __floordiv__(self, other): return _M().int_div(self, other)
    def __rfloordiv__(self, other): return _M().int_div(other, self)
    def __mod__(self, other): return _M().mod(self, other)
    def __rmod__(self, other): return _M().mod(other, self)
    def __pow__(self, other): return _M().pow(self, other)
    def __rpow__(self, other): return _M().pow(other, self)
    def __neg__(self): return _M().neg(self)
    def __abs__(self): return _M().abs(self)
    def __gt__(self, other): return _comparison(_M().gt(self, other))
    def __lt__(self, other): return _comparison(_M().lt(self, other))
    def __ge__(self, other): return _comparison(_M().ge(self, other))
    def __le__(self, other): return _comparison(_M().le(self, other))
    def __xor__(self, other): return _X().xor(self, other)
    def __rxor__(self, other): return _X().xor(other, self)
    def __and__(self, other): return _M().and_(self, other)
    def __or__(self, other): return _M().or_(self, other)
    def __rand__(self, other): return _M().and_(other, self)
    def __ror__(self, other): return _M().or_(other, self)
    def __pos__(self): return self
    def __invert__(self): return _M().invert(self)
    def __matmul__(self, other): return _M().dot(self, other)
    def __rmatmul__(self, other): return _M().dot(other, self)

    def __repr__(self):
        text = str(self)
        if config.print_test_value and hasattr(self.tag, "test_value"):  # Theano's print_test_value
            text += "\n" + repr(self.tag.test_value)
        return text

    # == stays identity (graphs are put in dicts and sets); use T.eq for elementwise equality
    __hash__ = object.__hash__

    def __bool__(self):
        """As in Theano: a variable is true (``if not W:`` tests that it exists), except the result of a
        comparison operator, whose truth would be a silent lie (``a < b < c`` is ``(a < b) and (b < c)``)."""
        if getattr(self.tag, "is_comparison", False):
            raise TypeError(
                f"the comparison {self} has no truth value yet (it is computed later), so it cannot be used in "
                "`if`, `and`, `or` or a chained comparison such as a < b < c. Use T.switch(cond, a, b) or "
                "ifelse for a choice inside the graph, T.and_/T.or_ to combine conditions, or compile and call "
                "a function.")
        return True

    def __iter__(self):
        """A vector whose length the graph knows (``x.shape``, a constant) unpacks, as in Theano:
        ``rows, cols = x.shape``.  Anything else cannot be iterated over."""
        if self.type.ndim == 1:
            try:
                n = get_vector_length(self)
            except ValueError:
                n = None
            if n is not None:
                return iter([self[i] for i in range(n)])
        raise TypeError("a symbolic tensor cannot be iterated over (its length is not known until it runs); "
                        "index it (x[i]) or use a reduction instead")

    def __len__(self):
        raise TypeError("len() of a symbolic tensor is not known until it runs; use x.shape[0]")

    # shape and layout -------------------------------------------------
    @property
    def ndim(self): return self.type.ndim
    @property
    def dtype(self): return self.type.dtype
    @property
    def broadcastable(self): return self.type.broadcastable
    @property
    def T(self): return self.transpose()
    @property
    def shape(self): return _M().shape(self)
    @property
    def size(self): return _M().prod(self.shape)

    def transpose(self, *axes):
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return self.dimshuffle(*axes)

    def dimshuffle(self, *pattern):
        if len(pattern) == 1 and isinstance(pattern[0], (tuple, list)):
            pattern = tuple(pattern[0])
        return _tensor.DimShuffle(self.type.broadcastable, pattern)(self)

    def reshape(self, *shape, ndim=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, Variable)):
            shape = shape[0]
        return _M().reshape(self, shape, ndim=ndim)

    def flatten(self, ndim=None, outdim=None):
        return _X().flatten(self, ndim, outdim)

    def astype(self, dtype): return _M().cast(self, dtype)
    def __getitem__(self, index): return _M().getitem(self, index)

    # reductions -------------------------------------------------------
    def sum(self, axis=None, keepdims=False, dtype=None): return _M().sum(self, axis, keepdims=keepdims, dtype=dtype)
    def mean(self, axis=None, keepdims=False, dtype=None, acc_dtype=None):
        return _M().mean(self, axis, keepdims=keepdims, dtype=dtype, acc_dtype=acc_dtype)
    def max(self, axis=None, keepdims=False): return _M().max(self, axis, keepdims=keepdims)
    def min(self, axis=None, keepdims=False): return _M().min(self, axis, keepdims=keepdims)
    def prod(self, axis=None, keepdims=False): return _M().prod(self, axis, keepdims=keepdims)
    def dot(self, other): return _M().dot(self, other)
    def argmax(self, axis=None, keepdims=False): return _S().argmax(self, axis, keepdims)
    def argmin(self, axis=None, keepdims=False): return _S().argmin(self, axis, keepdims)
    def argsort(self, axis=-1, kind="quicksort"): return _S().argsort(self, axis, kind)
    def sort(self, axis=-1, kind="quicksort"): return _S().sort(self, axis, kind)
    def round(self, mode=None): return _X().round(self, mode)
    def clip(self, a_min, a_max): return _M().clip(self, a_min, a_max)
    def repeat(self, repeats, axis=None): return _X().repeat(self, repeats, axis)
    def var(self, axis=None, keepdims=False): return _M().var(self, axis, keepdims)
    def std(self, axis=None, keepdims=False): return _M().std(self, axis, keepdims)
    def copy(self, name=None):
        out = _M().identity(self)
        out.name = name
        return out
    def zeros_like(self, dtype=None): return _M().zeros_like(self, dtype)
    def ones_like(self, dtype=None): return _M().ones_like(self, dtype)
    def nonzero(self, return_matrix=False): return _tensor.more_ops.nonzero(self, return_matrix)

    def nonzero_values(self): return self.flatten()[_M().neq(self.flatten(), 0)]

    def transfer(self, target):
        """Theano's ``x.transfer('cpu')`` / ``x.transfer('gpu')`` (or a device name): an explicit transfer op,
        or ``x`` itself when it already lives there."""
        gpu_from_host, host_from_gpu = wiring.get("gpu_from_host"), wiring.get("host_from_gpu")
        on_device = hasattr(self.type, "host_type")
        if target == "cpu":
            return host_from_gpu(self) if on_device else self
        if not isinstance(target, str) or not (target in ("gpu", "sim", "cuda", "dev0") or target.startswith("cuda")
                                               or target.startswith("dev")):
            raise ValueError(f"transfer({target!r}): use 'cpu', or 'gpu' (also 'cuda', 'cuda:N', 'sim', 'devN')")
        return self if on_device else gpu_from_host(self)
    def exp(self): return _M().exp(self)
    def log(self): return _M().log(self)
    def sqrt(self): return _M().sqrt(self)


# Every other tensor module builds on this one, so the methods reach math, sorting, extra_ops and DimShuffle
# through the package when they run (it has imported them all by then).
def _M():
    return _tensor.math


def _S():
    return _tensor.sorting


def _X():
    return _tensor.extra_ops


def _comparison(var):
    """Mark the result of ``<``/``>``/``<=``/``>=`` so that its truth value is refused (see ``__bool__``)."""
    var.tag.is_comparison = True
    return var


class TensorVariable(_TensorMethods, Variable):
    """A symbolic tensor (the result of an op, or a function input)."""


class TensorConstant(_TensorMethods, Constant):
    """A tensor whose value is fixed in the graph."""

    def __str__(self):
        if self.name is not None:
            return self.name
        if self.data.ndim == 0:
            return str(self.data.item())
        text = np.array2string(self.data, threshold=5)
        return text if len(text) <= 30 else f"TensorConstant{{{self.type}}}"


def _is_python_number(value):
    return isinstance(value, (numbers.Number, bool)) and not isinstance(value, np.generic)


def _smallest_int(value):
    """Theano's autocast of a Python int: the narrowest of int8/16/32/64 that holds it."""
    for dtype in ("int8", "int16", "int32", "int64"):
        info = np.iinfo(dtype)
        if info.min <= value <= info.max:
            return dtype
    return "int64"  # too big for any: np.asarray raises the OverflowError below


def constant(value, name=None, dtype=None):
    """A constant tensor.  Python floats become ``floatX`` (as in Theano), ints int64 (the narrowest int that
    holds them under ``config.autocast='theano'``, as in Theano)."""
    if dtype is None and _is_python_number(value):
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, numbers.Integral):
            dtype = "int64" if config.autocast == "numpy" else _smallest_int(value)
        elif isinstance(value, numbers.Real):
            dtype = config.floatX
        else:
            dtype = "complex128"
    try:
        data = np.asarray(value, dtype=dtype)
    except OverflowError as exc:
        raise OverflowError(f"the constant {value!r} does not fit in {dtype}: {exc}") from None
    if data.dtype == object:
        raise TypeError(f"cannot make a tensor constant out of {type(value).__name__} {value!r}")
    bcast = tuple(s == 1 for s in data.shape)
    return TensorConstant(TensorType(data.dtype, bcast), data, name=name)


def as_tensor_variable(value, name=None, ndim=None):
    """Turn a variable, an array or a Python number into a tensor variable."""
    if isinstance(value, Variable):
        if not isinstance(value.type, TensorType):
            raise TypeError(f"expected a tensor, got {value} of type {value.type}")
        result = value
    elif isinstance(value, (list, tuple)) and any(isinstance(v, Variable) for v in value):
        result = _M().stack(value)
    elif _is_device_array(value):
        raise TypeError(
            "a device array cannot be used directly in a graph; put it in a shared variable "
            "(coursekit.shared(...)) or pass it as a function input")
    else:
        result = constant(value, name=name)
    if ndim is not None and result.type.ndim != ndim:
        raise TypeError(f"expected a {ndim}-d tensor, got {result.type}")
    return result


def get_vector_length(v):
    """The length of a symbolic vector when the graph knows it (``x.shape``, a constant, a stack of scalars).

    Raises ValueError when only running the function can tell (callers with a better hint catch it)."""
    v = as_tensor_variable(v)
    if v.type.ndim != 1:
        raise TypeError(f"get_vector_length: {v} is not a vector ({v.type})")
    if getattr(v, "data", None) is not None:
        return len(v.data)
    if v.owner is not None:
        length = vector_length_from(v.owner.op, v)
        if length is not None:
            return length
    if v.type.broadcastable[0]:
        return 1
    raise ValueError(f"the length of {v} is not known until the function runs; index it (v[i]) instead")


@functools.singledispatch
def vector_length_from(op, var):
    """The length of the vector ``var`` that ``op`` computes, when the op alone says it; else None.

    Ops that know register beside their class (``@vector_length_from.register(Shape)``), so the
    question is answered by the op's type, never by comparing class names (PyTensor's
    ``_get_vector_length``). GPU twins, being subclasses, answer as their host op does.
    """
    return None


def weak_constants(args, scalar_op=None):
    """Convert a mix of tensors and Python numbers with NumPy 2's weak-scalar rule.

    Python numbers take the dtype NumPy would give them next to the tensor
    arguments: ``float32 + 2.5`` keeps float32, ``int32 / 2`` becomes float64
    (through the op, not the constant).  Returns tensor variables.

    An integer that does not fit that dtype (``int8_vector + 1000``) is an
    OverflowError, as in NumPy -- except for the ops where NumPy accepts it
    (comparisons, true division: ``int8_vector > 1000`` is all False); given
    ``scalar_op``, those keep the number at its default dtype when that gives
    NumPy's result dtype.
    """
    tensors = [a for a in args if isinstance(a, Variable)]
    if not tensors or all(isinstance(a, Variable) for a in args):
        return [as_tensor_variable(a) for a in args]
    dtypes = [np.dtype(a.type.dtype) for a in tensors]
    result = []
    for a in args:
        if isinstance(a, Variable):
            result.append(as_tensor_variable(a))
        elif _is_python_number(a):
            if isinstance(a, float) and config.autocast == "theano" and all(d.kind in "iub" for d in dtypes):
                dtype = np.result_type(*dtypes, np.dtype(config.floatX))  # Theano: the float is a floatX constant
            else:
                dtype = np.result_type(*dtypes, a)
            try:
                result.append(constant(a, dtype=dtype))
            except OverflowError as exc:
                fallback = _numpy_accepts_out_of_range(scalar_op, args, a)
                if fallback is not None:
                    result.append(fallback)
                    continue
                raise OverflowError(f"{exc} (NumPy 2 refuses out-of-range Python integers next to {dtype} "
                                    f"arrays; cast the tensor to a wider dtype first)") from None
        else:
            result.append(as_tensor_variable(a))
    return result


def _numpy_accepts_out_of_range(scalar_op, args, value):
    """A constant for an out-of-range Python int where NumPy itself accepts it, else None."""
    if scalar_op is None or not getattr(scalar_op, "is_ufunc", False):
        return None
    probes = [np.ones(1, dtype=a.type.dtype) if isinstance(a, Variable) else a if a is value else 1 for a in args]
    try:
        with np.errstate(all="ignore"):
            expected = np.asarray(scalar_op.impl(*probes)).dtype.name
    except (OverflowError, TypeError, ValueError):
        return None
    wide = constant(value)
    dtypes = [a.type.dtype if isinstance(a, Variable) else wide.type.dtype if a is value
              else np.result_type(a).name for a in args]
    return wide if scalar_op.output_dtype(*dtypes) == expected else None



