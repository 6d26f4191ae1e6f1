"""``coursekit.tensor`` — symbolic tensors, imported by convention as ``T``.

Constructors make input variables: ``T.fvector('x')`` is a float32 vector,
``T.matrix('m')`` a matrix of ``config.floatX``.  Everything else builds graph
nodes: ``T.exp(x)``, ``T.dot(m, x)``, ``x.sum(axis=0)``, ``x[1:]``.
"""
from __future__ import annotations

from .. import wiring
from ..config import config
from . import nnet  # noqa: F401
from .blas import Dot, Gemm, Gemv  # noqa: F401
from .elemwise import DimShuffle, Elemwise  # noqa: F401
from .math import *  # noqa: F401,F403
from .math import abs, max, min, sum  # noqa: F401,A004
from .reduction import CAReduce, Max, Min, Prod, Sum  # noqa: F401
from .shape import Reshape, Shape  # noqa: F401
from .subtensor import AdvancedSubtensor1, IncSubtensor, Subtensor  # noqa: F401
from .type import TensorType
from .var import TensorConstant, TensorVariable, as_tensor_variable, constant  # noqa: F401
# Theano's wider surface (issue 12): indexing, construction, orderings, more products
from .advanced import AdvancedIncSubtensor, AdvancedSubtensor, inc_subtensor, set_subtensor  # noqa: F401,E402
from .construct import (ARange, Alloc, Eye, SpecifyShape, alloc, arange, eye, fill, identity_like,  # noqa: F401,E402
                        ones, specify_shape, zeros)
from .extra_ops import (BatchedDot, Repeat, Tile, batched_dot, bitwise_xor, flatten, join,  # noqa: F401,E402
                        repeat, round, stack, tensordot, tile, xor)  # noqa: A004  (Theano's T.round)
from .sorting import ArgReduce, ArgSort, Sort, argmax, argmin, argsort, max_and_argmax, sort  # noqa: F401,E402
# Theano names libraries (Lasagne, Keras 1.x) call that the course never needed (issue 27)
from .more_ops import (Rebroadcast, Variable, abs_, addbroadcast, all, any, arccos, arcsin, arctan,  # noqa: F401,E402,A004
                     arctan2, cosh, erf, erfc, exp2, flatnonzero, floor_div, inv, isinf, isnan, log2, log10, nonzero,
                     patternbroadcast,
                     power, reciprocal, shape_padaxis, shape_padleft, shape_padright, sign, sinh, squeeze, tan,
                     trunc, unbroadcast)
from .cumulative import cumprod, cumsum  # noqa: F401,E402
from .var import get_vector_length  # noqa: F401,E402
from ..scalar.dtypes import (all_dtypes, complex_dtypes, continuous_dtypes, discrete_dtypes,  # noqa: F401,E402
                             float_dtypes, int_dtypes, integer_dtypes, uint_dtypes)  # Theano's T.float_dtypes ...

_RANKS = {"scalar": (), "vector": (False,), "matrix": (False, False), "tensor3": (False,) * 3,
          "tensor4": (False,) * 4, "tensor5": (False,) * 5, "row": (True, False), "col": (False, True)}
_PREFIXES = {"": None, "f": "float32", "d": "float64", "i": "int32", "l": "int64", "b": "int8",
             "w": "int16", "c": "complex64", "z": "complex128"}


def tensor(dtype=None, broadcastable=None, name=None, shape=None):
    """A symbolic tensor input of any rank: ``T.tensor('float32', (False, True))``."""
    if broadcastable is None:
        if shape is None:
            raise TypeError("tensor() needs broadcastable=(False, ...) or shape=(None, 1, ...)")
        broadcastable = tuple(s == 1 for s in shape)
    return TensorType(dtype or config.floatX, broadcastable).make_variable(name)


def _constructor(rank, dtype):
    bcast = _RANKS[rank]

    def make(name=None, dtype=dtype):
        return TensorType(dtype or config.floatX, bcast).make_variable(name)

    make.__name__ = rank
    make.__doc__ = f"A symbolic {rank} input of dtype {dtype or 'config.floatX'}."
    return make


for _rank in _RANKS:
    for _prefix, _dtype in _PREFIXES.items():
        globals()[_prefix + _rank] = _constructor(_rank, _dtype)


def _plural(rank, dtype):
    make_one = _constructor(rank, dtype)

    def make_many(*names):
        """Several inputs at once: ``T.fvectors('x,y')``, ``T.fvectors('x', 'y')``, ``T.fvectors(2)``, or
        Theano's ``T.fvectors('xyz')`` (one single-letter variable per character; a single name gives
        one variable, not a list, as in Theano)."""
        if len(names) == 1 and isinstance(names[0], int):
            return [make_one() for _ in range(names[0])]
        if len(names) == 1:
            text = names[0]
            if "," in text:
                names = [n.strip() for n in text.split(",")]
            elif len(text) == 1:
                return make_one(text)
            else:
                names = list(text)
        return [make_one(n) for n in names]

    return make_many


for _plural_name, _rank in (("scalars", "scalar"), ("vectors", "vector"), ("matrices", "matrix"),
                            ("tensor3s", "tensor3"), ("rows", "row"), ("cols", "col")):
    for _prefix, _dtype in _PREFIXES.items():
        globals()[_prefix + _plural_name] = _plural(_rank, _dtype)


def __getattr__(name):
    # T.grad, T.Rop, T.Lop, T.jacobian, T.hessian: Theano shows them here, but they live above tensor
    # (coursekit/wiring.py)
    if name in ("grad", "Rop", "Lop", "jacobian", "hessian"):
        return wiring.get(name)
    # T.shared_randomstreams loads on first use (it needs the compile package, which needs this one)
    if name in ("shared_randomstreams", "signal"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'coursekit.tensor' has no attribute {name!r}")
