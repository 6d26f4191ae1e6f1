"""Random-stream state as Theano's (issue 38): the tutorial's "Using Random Numbers" blocks, run as written.

``RandomStreams`` keeps a ``numpy.random.RandomState`` per random variable, seeded as Theano's
``shared_randomstreams`` seeded it, so ``rv.rng.get_value()`` is a RandomState (``seed``, ``get_state``,
``set_state``) and a seed gives the numbers Theano's documentation prints.
"""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
from coursekit import function
from coursekit.random import MRG_RandomStreams, RandomStreams


def test_the_tutorials_state_block_seed_get_state_set_state():
    srng = RandomStreams(seed=234)
    rv_u = srng.uniform((2, 2))
    rv_n = srng.normal((2, 2))
    f = function([], rv_u)
    g = function([], rv_n, no_default_updates=True)
    nearly_zeros = function([], rv_u + rv_u - 2 * rv_u)
    assert not np.array_equal(f(), f()) and np.array_equal(g(), g())
    rng_val = rv_u.rng.get_value(borrow=True)  # Get the rng for rv_u
    assert isinstance(rng_val, np.random.RandomState)
    rng_val.seed(89234)                        # seeds the generator
    rv_u.rng.set_value(rng_val, borrow=True)   # Assign back seeded rng
    np.testing.assert_array_equal(f(), np.random.RandomState(89234).uniform(0.0, 1.0, (2, 2)).astype("float32"))
    srng.seed(902340)  # seeds rv_u and rv_n with different seeds each
    seeds = np.random.RandomState(902340).randint(2 ** 30, size=2)
    np.testing.assert_array_equal(g(), np.random.RandomState(int(seeds[1])).normal(0.0, 1.0, (2, 2)).astype("float32"))
    state_after_v0 = rv_u.rng.get_value().get_state()
    np.testing.assert_allclose(nearly_zeros(), np.zeros((2, 2)), atol=1e-6)  # this affects rv_u's generator
    v1 = f()
    rng = rv_u.rng.get_value(borrow=True)
    rng.set_state(state_after_v0)
    rv_u.rng.set_value(rng, borrow=True)
    v2 = f()  # v2 != v1
    v3 = f()  # v3 == v1
    assert not np.array_equal(v1, v2) and np.array_equal(v1, v3)
    assert srng[rv_u.rng].get_state()[2] == rv_u.rng.get_value().get_state()[2]  # Theano's srng[rng]


class Graph:
    def __init__(self, seed=123, streams=RandomStreams):
        self.rng = streams(seed)
        self.y = self.rng.uniform(size=(1,))


def copy_random_state(g1, g2):
    if isinstance(g1.rng, MRG_RandomStreams):
        g2.rng.rstate = g1.rng.rstate
    for (su1, su2) in zip(g1.rng.state_updates, g2.rng.state_updates):
        su2[0].set_value(su1[0].get_value())


def test_the_tutorials_copying_random_state_block_prints_theanos_numbers():
    with theano.config.change(floatX="float64"):  # the tutorial ran with Theano's float64 default
        g1, g2 = Graph(seed=123), Graph(seed=987)
        f1, f2 = theano.function([], g1.y), theano.function([], g2.y)
    # the values Theano's documentation prints for this block
    np.testing.assert_allclose(f1(), [0.72803009], rtol=1e-7)
    np.testing.assert_allclose(f2(), [0.55056769], rtol=1e-7)
    copy_random_state(g1, g2)
    np.testing.assert_allclose(f1(), [0.59044123], rtol=1e-7)
    np.testing.assert_allclose(f2(), [0.59044123], rtol=1e-7)


def test_the_copying_block_with_mrg_streams_and_rstate():
    g1, g2 = Graph(seed=123, streams=MRG_RandomStreams), Graph(seed=987, streams=MRG_RandomStreams)
    f1, f2 = theano.function([], g1.y), theano.function([], g2.y)
    assert f1() != f2()
    copy_random_state(g1, g2)
    assert f1() == f2() and g2.rng.rstate.tolist() == g1.rng.rstate.tolist()
    assert g1.y.rng.get_value().dtype == np.int32  # Theano's int32 rstate rows


def test_a_state_refuses_what_is_not_a_random_state():
    rv = RandomStreams(1).uniform((2,))
    with pytest.raises(ValueError, match="set_value\\(\\) takes a numpy.random.RandomState"):
        rv.rng.set_value(np.zeros(3))
    with pytest.raises(TypeError, match="no zero"):
        rv.rng.zero()
    words = rv.rng.get_value(return_internal_type=True)
    assert words.dtype == np.uint32 and words.shape == (628,)
