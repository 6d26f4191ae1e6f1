"""The random ops: each takes a generator *state* and returns (new state, sample).

Random numbers in a pure dataflow graph work like this (as in Theano): the
state is an input, the op returns the advanced state as a second output,
and the stream object gives the state's shared variable a ``default_update``
pointing at that output.  Every compiled function that draws from the stream
therefore advances it, and a function compiled with
``no_default_updates=True`` replays the same numbers on every call.

* :class:`MRGUniform` — MRG31k3p uniforms (see :mod:`.mrg`), written against
  ``xp`` so the same numbers come out of NumPy and CuPy;
* :class:`NumpyRandom` — a NumPy ``Generator`` (PCG64) distribution call,
  host only: the generator behind ``RandomStreams``;
* :class:`SearchCDF` — categorical draws from uniforms and probabilities
  (``multinomial`` and weighted ``choice`` of ``MRG_RandomStreams``).
"""
from __future__ import annotations

import numpy as np

from ..gradient import UndefinedGrad
from ..graph import Apply, Op
from ..tensor.type import TensorType, host_like
from ..tensor.xpop import XpOp
from . import mrg


def _size_tuple(size, what):
    """The shape an int-vector size input holds (NumPy or CuPy: ``tolist`` reads either)."""
    shape = tuple(int(s) for s in size.tolist())
    if any(s < 0 for s in shape):
        raise ValueError(f"{what}: negative size in {shape}")
    return shape


class MRGUniform(XpOp):
    """(state, size) -> (new state, uniforms of ``dtype`` in (0, 1) with shape ``size``).

    On a GPU device it runs as ``GpuMRGUniform``: the same integer recurrence in device memory, so the same
    numbers as on the host (the size stays a host vector)."""
    verified_outputs = True

    __props__ = ("dtype", "ndim")
    gpu_name = "GpuMRGUniform"
    host_inputs = (1,)
    fold_constants = False  # never precompute random numbers at compile time

    def __init__(self, dtype, ndim):
        self.dtype, self.ndim = dtype, ndim

    def make_node(self, state, size):
        return Apply(self, [state, size], [host_like(state),
                                           TensorType(self.dtype, (False,) * self.ndim).make_variable()])

    def run(self, xp, inputs, output_storage):
        """The whole op against an array module: NumPy here, CuPy on a GPU (bit-identical results)."""
        state, size = inputs
        shape = _size_tuple(size, "MRG_RandomStreams")
        if len(shape) != self.ndim:
            raise ValueError(f"MRG_RandomStreams: the size {shape} has {len(shape)} entries but the graph was built "
                             f"for {self.ndim}")
        new_state, flat = mrg.uniform_steps(state, int(np.prod(shape, dtype=np.int64)), xp, self.dtype)
        output_storage[0][0] = new_state
        output_storage[1][0] = flat.reshape(shape)

    def L_op(self, inputs, outputs, output_grads):
        return [None, None]


_MT_WORDS = 624


def mt_state_vector(seed):
    """A fresh ``numpy.random.RandomState(seed)`` as a uint32 vector (what ``RandomStreams`` keeps in a shared
    variable): Theano kept the RandomState object itself, and drew with its methods, so the numbers are Theano's."""
    return pack_random_state(np.random.RandomState(int(seed)))


def pack_random_state(random_state):
    """A RandomState's whole state as 628 uint32 words: the 624-word key, the position, and the cached Gaussian."""
    _, key, pos, has_gauss, cached = random_state.get_state()
    gauss = np.frombuffer(np.float64(cached).tobytes(), dtype=np.uint32)
    return np.concatenate([np.asarray(key, dtype=np.uint32), np.asarray([pos, has_gauss], dtype=np.uint32), gauss])


def unpack_random_state(words):
    """The ``numpy.random.RandomState`` a packed state vector holds."""
    words = np.asarray(words, dtype=np.uint32)
    if words.shape != (_MT_WORDS + 4,):
        raise ValueError(f"a RandomStreams state is {_MT_WORDS + 4} uint32 words (a packed RandomState), got an array of "
                         f"shape {words.shape}; set_value() takes a numpy.random.RandomState or such a vector")
    cached = float(np.frombuffer(words[-2:].tobytes(), dtype=np.float64)[0])
    random_state = np.random.RandomState()
    random_state.set_state(("MT19937", words[:_MT_WORDS], int(words[_MT_WORDS]), int(words[_MT_WORDS + 1]), cached))
    return random_state


def _one_at_a_time(size, draw):
    """Theano's helpers drew these element by element (so the stream is consumed in that order)."""
    shape = tuple(size or ())
    out = np.empty(shape, dtype=np.int64)
    for index in np.ndindex(*shape):
        out[index] = draw()
    return out


def _permutation(rs, size, n):
    shape = tuple(size or ())
    out = np.empty(shape + (int(n),), dtype=np.int64)
    for index in np.ndindex(*shape):
        out[index] = rs.permutation(int(n))
    return out


def _multinomial(rs, n, pvals, size):
    pvals = np.asarray(pvals, dtype=np.float64)
    rows = tuple(size) if size is not None else pvals.shape[:-1]
    out = np.empty(rows + (pvals.shape[-1],), dtype=np.int64)
    for index in np.ndindex(*rows):
        p = pvals[index] if pvals.ndim > 1 else pvals
        out[index] = rs.multinomial(int(n), p * (1.0 - 5e-5) if 1.0 < p.sum() < 1.0 + 1e-5 else p)
    return out


# method -> call(RandomState, params, size): RandomState's own methods, as Theano's raw_random called them
_METHODS = {
    "uniform": lambda g, p, size: g.uniform(p[0], p[1], size),
    "normal": lambda g, p, size: g.normal(p[0], p[1], size),
    "binomial": lambda g, p, size: g.binomial(p[0], p[1], size),
    "random_integers": lambda g, p, size: (g.randint(p[0], p[1] + 1, size) if np.ndim(p[0]) or np.ndim(p[1])
                                           else _one_at_a_time(size, lambda: g.randint(p[0], p[1] + 1))),
    "choice_replace": lambda g, p, size: g.choice(p[0], size, True, *p[1:]),
    "choice_no_replace": lambda g, p, size: g.choice(p[0], size, False, *p[1:]),
    "permutation": lambda g, p, size: _permutation(g, size, p[0]),
    "multinomial": lambda g, p, size: _multinomial(g, p[0], p[1], size),
}


class NumpyRandom(Op):
    """(state, size or nothing, *params) -> (new state, sample): one RandomState call (host only)."""
    verified_outputs = True

    __props__ = ("method", "dtype", "ndim", "has_size")
    fold_constants = False

    def __init__(self, method, dtype, ndim, has_size):
        if method not in _METHODS:
            raise ValueError(f"unknown random method {method!r}; known: {sorted(_METHODS)}")
        self.method, self.dtype, self.ndim, self.has_size = method, dtype, ndim, has_size

    def __str__(self):
        return f"RandomFunction{{{self.method}}}"

    def make_node(self, state, *args):
        sample = TensorType(self.dtype, (False,) * self.ndim).make_variable()
        return Apply(self, [state, *args], [host_like(state), sample])

    def perform(self, node, inputs, output_storage):
        state, *args = inputs
        size = _size_tuple(args.pop(0), "RandomStreams") if self.has_size else None
        gen = unpack_random_state(state)
        try:
            sample = np.asarray(_METHODS[self.method](gen, [a.item() if a.ndim == 0 else a for a in args], size))
        except ValueError as exc:
            raise ValueError(f"RandomStreams.{self.method.split('_')[0]}: {exc}") from None
        if sample.ndim != self.ndim:
            raise ValueError(f"RandomStreams.{self.method}: the sample has shape {sample.shape}, but the graph was "
                             f"built for {self.ndim} dimensions; give size= explicitly")
        output_storage[0][0] = pack_random_state(gen)
        output_storage[1][0] = sample.astype(self.dtype, copy=False)

    def L_op(self, inputs, outputs, output_grads):
        undefined = UndefinedGrad("a random sample has no derivative with respect to its distribution's parameters "
                                  "here; use consider_constant=[sample] if it should be treated as data")
        return [None] + [undefined if v.type.dtype[0] == "f" else None for v in inputs[1:]]


class SearchCDF(XpOp):
    """Category indices: for each uniform ``u`` the first ``k`` with ``u < cumsum(p)[k]`` (p normalised).

    ``p`` is a vector (one distribution) or a matrix (one row per draw, with
    ``u`` of shape (rows,) or (rows, draws)).  Written against ``xp``.
    """
    verified_outputs = True

    fold_constants = False
    gpu_name = "GpuSearchCDF"

    def make_node(self, p, u):
        return Apply(self, [p, u], [TensorType("int64", (False,) * u.type.ndim).make_variable()])

    def run(self, xp, inputs, output_storage):
        p, u = inputs
        if xp.any(p < 0):
            raise ValueError("multinomial/choice: probabilities must be non-negative")
        cdf = xp.cumsum(p, axis=-1)
        cdf = cdf / cdf[..., -1:]
        if p.ndim == 1:
            idx = xp.searchsorted(cdf, u, side="right")
        else:
            expanded = u.reshape(u.shape[0], -1)
            idx = (expanded[:, :, None] >= cdf[:, None, :]).sum(axis=-1).reshape(u.shape)
        output_storage[0][0] = xp.minimum(idx, p.shape[-1] - 1).astype("int64")

    def L_op(self, inputs, outputs, output_grads):
        return [UndefinedGrad("a categorical draw has no derivative with respect to its probabilities"), None]


class OneHot(XpOp):
    """Counts of each category per row: indices (rows, draws) -> (rows, k) (``multinomial``'s output)."""
    verified_outputs = True

    __props__ = ("dtype",)
    gpu_name = "GpuOneHot"
    host_inputs = (1,)  # k, the number of categories: an output size

    def __init__(self, dtype):
        self.dtype = dtype

    def make_node(self, idx, k):
        return Apply(self, [idx, k], [TensorType(self.dtype, (False, False)).make_variable()])

    def run(self, xp, inputs, output_storage):
        idx, k = inputs
        out = xp.zeros((idx.shape[0], int(k)), dtype=self.dtype)
        rows = xp.arange(idx.shape[0])
        for column in idx.T:  # one draw per row at a time: a row's index never repeats within one column
            out[rows, column] += 1
        output_storage[0][0] = out

    def L_op(self, inputs, outputs, output_grads):
        return [None, None]
