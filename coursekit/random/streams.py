"""``RandomStreams`` and ``MRG_RandomStreams``: Theano's random number streams.

::

    srng = RandomStreams(seed=234)
    rv_u = srng.uniform((2, 2))
    f = coursekit.function([], rv_u)          # each call: new numbers
    g = coursekit.function([], rv_u, no_default_updates=True)  # same numbers every call

Each drawing method makes a new shared variable holding a generator state,
and a random op that reads it and returns the advanced state; that output is
the state's ``default_update``, so every function drawing from the stream
advances it (see :mod:`.ops`).  ``seed(n)`` resets every state the stream
made, so a program is reproducible from its seed.

* ``RandomStreams`` draws with a ``numpy.random.RandomState`` per variable on
  the host, seeded as Theano's ``shared_randomstreams`` seeded them, so a seed
  gives Theano's numbers; ``rv.rng.get_value()`` is that RandomState;
* ``MRG_RandomStreams`` is Theano's MRG31k3p (:mod:`.mrg`): Theano's numbers
  for a seed, the same on the CPU and on a GPU device; its other distributions are built in
  the graph from its uniforms (Box-Muller for ``normal``, comparisons for
  ``binomial``, sorting for ``permutation`` and ``choice``).
"""
from __future__ import annotations

import numpy as np

from .. import tensor as T
from ..compile.sharedvalue import TensorSharedVariable, shared
from ..config import config
from ..devices import current
from ..devices.types import GpuArrayType
from ..graph import Variable
from . import mrg
from .ops import MRGUniform, NumpyRandom, OneHot, SearchCDF, mt_state_vector, pack_random_state, unpack_random_state


def _size_vector(size, ndim, what):
    """(int64 shape vector, its length) for ``size``: a tuple of ints / int scalars, or an int vector."""
    if size is None:
        return None, None
    if isinstance(size, (int, np.integer)):
        size = (size,)
    if isinstance(size, Variable):
        if size.type.ndim != 1 or size.type.dtype[0] not in "iu":
            raise TypeError(f"{what}: size must be a tuple of ints or an integer vector such as x.shape; got {size} "
                            f"of type {size.type}. Pass e.g. size=(n, m) or size=x.shape.")
        length = ndim if ndim is not None else _known_length(size, what)
        return T.cast(size, "int64"), length
    if isinstance(size, (tuple, list)):
        for k, s in enumerate(size):
            if isinstance(s, Variable):
                if s.type.ndim != 0 or s.type.dtype[0] not in "iu":
                    raise TypeError(f"{what}: size[{k}] must be an integer scalar, got {s} of type {s.type}")
            elif not isinstance(s, (int, np.integer)):
                raise TypeError(f"{what}: size must be a tuple of ints or an integer vector; size[{k}] is {s!r}")
        if ndim is not None and ndim != len(size):
            raise ValueError(f"{what}: ndim={ndim} but size has {len(size)} entries")
        if all(isinstance(s, (int, np.integer)) for s in size):
            return T.constant(np.asarray(size, dtype="int64")), len(size)
        return T.stack([T.cast(T.as_tensor_variable(s), "int64") for s in size]), len(size)
    raise TypeError(f"{what}: size must be a tuple of ints or an integer vector such as x.shape, got {size!r}")


def _known_length(vector, what):
    try:
        return T.get_vector_length(vector)
    except ValueError:
        raise TypeError(f"{what}: the length of the size vector {vector} is not known when the graph is built; "
                        "pass ndim=... as well, or a tuple of sizes") from None


def _state_on_device(state):
    """On a GPU device, keep an MRG state (int64) in device memory, where ``GpuMRGUniform`` reads and updates it.

    Shared variables go to the device only when they are float32, so the state would otherwise cross the
    bus twice on every call (an upload to draw, a download to store the advanced state), as Theano's GPU
    MRG avoided by keeping its state on the GPU.
    """
    device = current()
    if device.is_gpu and not isinstance(state.type, GpuArrayType):
        value = state.container.storage[0]
        state.type = state.container.type = GpuArrayType(value.dtype.name, state.type.broadcastable, device)
        state.container.storage[0] = device.to_device(value)
    return state


class _Streams:
    """What both stream classes share: seeding, the state variables, and their updates."""

    def __init__(self, seed=None):
        self.state_updates = []  # (state shared variable, new state): Theano's attribute
        self.seed(np.random.SeedSequence().entropy % (2 ** 31) if seed is None else seed)

    def updates(self):
        return list(self.state_updates)

    def _track(self, state, new_state, sample):
        state.default_update = new_state
        sample.rng, sample.update = state, (state, new_state)
        self.state_updates.append((state, new_state))
        return sample


class RandomStateSharedVariable(TensorSharedVariable):
    """A ``RandomStreams`` state (``rv.rng``): in the graph a packed uint32 vector (any device can hold it), to
    the program a ``numpy.random.RandomState``, as Theano's was.  ``rv.rng.get_value()`` is a RandomState (its
    ``get_state()``, ``seed()`` ...); ``set_value`` takes one (or the packed vector).  A RandomState got with
    ``borrow=True`` is still a copy: change it, then ``set_value`` it, as Theano's tutorial does."""

    def get_value(self, borrow=False, return_internal_type=False):
        words = super().get_value(borrow=borrow, return_internal_type=return_internal_type)
        return words if return_internal_type else unpack_random_state(np.asarray(words))

    def set_value(self, value, borrow=False):
        if isinstance(value, np.random.RandomState):
            value, borrow = pack_random_state(value), True
        else:
            unpack_random_state(value)  # refuses anything that is not a packed state, naming what it takes
        super().set_value(value, borrow=borrow)

    def zero(self):
        raise TypeError("a random state has no zero: set_value(numpy.random.RandomState(seed)) instead")


def _state_variable(words, name):
    state = shared(words, name=name)
    state.__class__ = RandomStateSharedVariable  # the same variable, whose value reads as a RandomState
    state.tag.is_rng = True  # Theano's mark (libraries look for it)
    return state


class RandomStreams(_Streams):
    """Random streams drawing with ``numpy.random.RandomState`` on the host, seeded as Theano's
    ``shared_randomstreams`` seeded them, so a seed gives Theano's numbers."""

    def __init__(self, seed=None):
        self.default_instance_seed = seed
        self.gen_seedgen = np.random.RandomState(seed)  # Theano's: each new variable's seed comes from it
        super().__init__(seed)

    def seed(self, seed=None):
        """Reset every state this stream has made, as Theano did: a RandomState(seed) gives each state, in the order
        they were made, a seed below 2^30 (``None``: the constructor's seed)."""
        seedgen = np.random.RandomState(self.default_instance_seed if seed is None else seed)
        for state, _ in self.state_updates:
            state.set_value(np.random.RandomState(int(seedgen.randint(2 ** 30))), borrow=True)

    def _next_seed(self):
        return int(self.gen_seedgen.randint(2 ** 30))

    def __getitem__(self, item):
        """Theano's ``srng[rv.rng]``: the RandomState of a state variable."""
        return item.get_value(borrow=True)

    def __setitem__(self, item, value):
        item.set_value(value, borrow=True)

    def _draw(self, method, size, params, dtype, ndim, extra_dims=0):
        what = f"RandomStreams.{method.split('_')[0]}"
        size_var, size_len = _size_vector(size if size != () else None, ndim, what)
        params = [T.as_tensor_variable(p) for p in params]
        if size_var is None:
            out_ndim = max([p.type.ndim for p in params if method not in ("multinomial",)] or [0])
            if method == "multinomial":
                out_ndim = params[1].type.ndim - 1
        else:
            out_ndim = size_len
        state = _state_variable(mt_state_vector(self._next_seed()), f"rng_state_{len(self.state_updates)}")
        args = ([size_var] if size_var is not None else []) + params
        op = NumpyRandom(method, np.dtype(dtype).name, out_ndim + extra_dims, size_var is not None)
        new_state, sample = op(state, *args)
        return self._track(state, new_state, sample)

    def uniform(self, size=None, low=0.0, high=1.0, ndim=None, dtype=None):
        return self._draw("uniform", size, [low, high], dtype or config.floatX, ndim)

    def normal(self, size=None, avg=0.0, std=1.0, ndim=None, dtype=None):
        return self._draw("normal", size, [avg, std], dtype or config.floatX, ndim)

    def binomial(self, size=None, n=1, p=0.5, ndim=None, dtype="int64"):
        return self._draw("binomial", size, [n, p], dtype, ndim)

    def random_integers(self, size=None, low=0, high=1, ndim=None, dtype="int64"):
        return self._draw("random_integers", size, [low, high], dtype, ndim)

    def choice(self, size=None, a=2, replace=True, p=None, ndim=None, dtype="int64"):
        params = [a] + ([p] if p is not None else [])
        method = "choice_replace" if replace else "choice_no_replace"
        return self._draw(method, size, params, dtype, ndim)

    def permutation(self, size=None, n=1, ndim=None, dtype="int64"):
        return self._draw("permutation", size, [n], dtype, ndim, extra_dims=1)

    def multinomial(self, size=None, n=1, pvals=(0.5, 0.5), ndim=None, dtype="int64"):
        pvals = T.as_tensor_variable(np.asarray(pvals, dtype="float64") if not isinstance(pvals, Variable)
                                     else pvals)
        return self._draw("multinomial", size, [n, pvals], dtype, ndim, extra_dims=1)


class MRG_RandomStreams(_Streams):  # noqa: N801 - Theano's name
    """Random streams from MRG31k3p: Theano's numbers for a seed, the same on the CPU and on a GPU device."""

    def __init__(self, seed=12345, use_cuda=None):
        self._default_seed = seed  # Theano's default_instance_seed: what seed() with no argument goes back to
        super().__init__(seed)

    def seed(self, seed=None):
        """Reset every state this stream has made, as if it had been created with ``seed``."""
        self._start = mrg.seed_to_state(self._default_seed if seed is None else seed)
        for state, _ in self.state_updates:
            n_streams = state.get_value(borrow=True).shape[0]
            state.set_value(mrg.substreams(self._take_start(), n_streams), borrow=True)

    @property
    def rstate(self):
        """Theano's ``rstate``: the six ints where the next random variable's first stream starts."""
        return self._start

    @rstate.setter
    def rstate(self, value):
        self._start = mrg.seed_to_state(list(value))

    def _take_start(self):
        start = self._start
        self._start = mrg.next_start(start)
        return start

    def _uniform01(self, size, ndim, dtype, nstreams, what):
        size_var, size_len = _size_vector(size, ndim, what)
        if size_var is None:
            raise TypeError(f"{what}: give size= (a tuple of ints or an integer vector such as x.shape)")
        if nstreams is None:
            nstreams = mrg.guess_n_streams(size)  # Theano's guess: it decides which stream makes which number
        state = _state_on_device(shared(mrg.substreams(self._take_start(), max(int(nstreams), 1)),
                                        name=f"mrg_state_{len(self.state_updates)}"))
        new_state, sample = MRGUniform(np.dtype(dtype).name, size_len)(state, size_var)
        return self._track(state, new_state, sample), size_var, size_len

    def uniform(self, size, low=0.0, high=1.0, ndim=None, dtype=None, nstreams=None):
        dtype = dtype or config.floatX
        u, _, _ = self._uniform01(size, ndim, dtype, nstreams, "MRG_RandomStreams.uniform")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)) and (low, high) == (0.0, 1.0):
            return u
        return T.cast(low + (high - low) * u, dtype)

    def normal(self, size, avg=0.0, std=1.0, ndim=None, dtype=None, nstreams=None, truncate=False):
        """Box-Muller: two uniforms make two independent standard normals."""
        dtype = dtype or config.floatX
        size_var, size_len = _size_vector(size, ndim, "MRG_RandomStreams.normal")
        n = T.prod(size_var)
        half = (n + 1) // 2
        u, _, _ = self._uniform01(T.stack([2 * half]), 1, dtype, nstreams, "MRG_RandomStreams.normal")
        radius = T.sqrt(-2 * T.log(u[:half]))
        angle = np.float32(2 * np.pi) * u[half:]
        z = T.concatenate([radius * T.cos(angle), radius * T.sin(angle)])[:n]
        if truncate:
            raise NotImplementedError("normal(truncate=True) is not implemented; clip the sample instead")
        return T.cast(avg + std * T.reshape(z, size_var, ndim=size_len), dtype)

    def binomial(self, size=None, n=1, p=0.5, ndim=None, dtype="int64", nstreams=None):
        p = T.as_tensor_variable(p)
        if size is None:
            size = p.shape
        if n == 1:  # Theano's: floatX uniforms below p
            u, _, _ = self._uniform01(size, ndim, config.floatX, nstreams, "MRG_RandomStreams.binomial")
            return T.cast(u < p, dtype)
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise TypeError(f"MRG_RandomStreams.binomial: n must be a positive Python int, got {n!r}")
        size_var, size_len = _size_vector(size, ndim, "MRG_RandomStreams.binomial")
        u, _, _ = self._uniform01(T.concatenate([size_var, T.constant(np.asarray([n]))]), size_len + 1,
                                  config.floatX, nstreams, "MRG_RandomStreams.binomial")
        return T.cast(T.sum(u < p.dimshuffle(*range(p.type.ndim), "x"), axis=-1), dtype)

    def multinomial(self, size=None, n=1, pvals=None, ndim=None, dtype="int64", nstreams=None):
        """One row of counts per row of ``pvals`` (a matrix: rows of probabilities), ``n`` draws each."""
        if pvals is None:
            raise TypeError("MRG_RandomStreams.multinomial: give pvals (a matrix, one distribution per row)")
        pvals = T.as_tensor_variable(pvals)
        if pvals.type.ndim != 2:
            raise TypeError(f"MRG_RandomStreams.multinomial: pvals must be a matrix, got {pvals.type}")
        u, _, _ = self._uniform01((pvals.shape[0], n), None, config.floatX, nstreams,
                                  "MRG_RandomStreams.multinomial")
        return OneHot(np.dtype(dtype).name)(SearchCDF()(pvals, u), pvals.shape[1])

    def choice(self, size=1, a=None, replace=True, p=None, ndim=None, dtype="int64", nstreams=None):
        """Draw from ``range(a)`` (``a`` an int or int scalar), optionally weighted by the vector ``p``."""
        if a is None:
            raise TypeError("MRG_RandomStreams.choice: give a (the number of categories)")
        size_var, size_len = _size_vector(size, ndim, "MRG_RandomStreams.choice")
        n = T.prod(size_var)
        a = T.as_tensor_variable(a)
        if replace:
            u, _, _ = self._uniform01(size_var, size_len, "float64", nstreams, "MRG_RandomStreams.choice")
            idx = T.cast(T.floor(u * a), "int64") if p is None else SearchCDF()(T.as_tensor_variable(p), u)
            return T.cast(idx, dtype)
        u, _, _ = self._uniform01(T.stack([a]), 1, "float64", nstreams, "MRG_RandomStreams.choice")
        keys = u if p is None else T.log(u) / T.as_tensor_variable(p)  # Efraimidis-Spirakis weighted keys
        order = T.argsort(-keys)[:n]
        return T.cast(T.reshape(order, size_var, ndim=size_len), dtype)

    def permutation(self, size=(), n=1, ndim=None, dtype="int64", nstreams=None):
        """Permutations of ``range(n)``: output shape ``size + (n,)`` (sorting uniform keys)."""
        size_var, size_len = _size_vector(tuple(size) + (n,) if not isinstance(size, Variable) else
                                          T.concatenate([size, T.stack([n])]), None, "MRG_RandomStreams.permutation")
        u, _, _ = self._uniform01(size_var, size_len, "float64", nstreams, "MRG_RandomStreams.permutation")
        return T.cast(T.argsort(u, axis=-1), dtype)
