"""Random streams: reproducible from the seed, advanced by default updates, right distributions."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.random import mrg
from coursekit.random import MRG_RandomStreams
from coursekit.random import RandomStreams

STREAMS = [RandomStreams, MRG_RandomStreams]


def _published_mrg31k3p(state, n):
    """The recurrence as L'Ecuyer and Touzin (2000) publish it, one number at a time in Python integers: an
    implementation independent of mrg.py's vectorised one (different order of state, no arrays)."""
    x1 = [state[2], state[1], state[0]]  # oldest first
    x2 = [state[5], state[4], state[3]]
    out = []
    for _ in range(n):
        x1.append((2 ** 22 * x1[-2] + (2 ** 7 + 1) * x1[-3]) % (2 ** 31 - 1))
        x2.append((2 ** 15 * x2[-1] + (2 ** 15 + 1) * x2[-3]) % (2 ** 31 - 21069))
        d = (x1[-1] - x2[-1]) % (2 ** 31 - 1)
        out.append((d if d > 0 else 2 ** 31 - 1) / 2 ** 31)
    return out, [x1[-1], x1[-2], x1[-3], x2[-1], x2[-2], x2[-3]]


def test_mrg31k3p_steps_as_the_published_recurrence():
    start = [12345] * 6
    expected, expected_state = _published_mrg31k3p(start, 50)
    state, got = mrg.uniform_steps(np.asarray([start], dtype=np.int32), 50)
    assert got.tolist() == expected and state[0].tolist() == expected_state and state.dtype == np.int32
    _, got32 = mrg.uniform_steps(np.asarray([start], dtype=np.int32), 50, dtype="float32")
    assert got32.dtype == np.float32 and (got32 < 1).all() and np.allclose(got32, expected, rtol=1e-6)
    # the largest difference (m1 - 1) stays below 1 in float32, as Theano's constant made sure
    assert np.float32(2 ** 31 - 2) * mrg.NORM32 < 1


def test_stream_jumps_are_matrix_powers_checked_against_stepping():
    start = mrg.seed_to_state(7)
    assert start.tolist() == [7] * 6  # Theano's rule: an int seed is six copies of it
    for e in (1, 11, 64):
        stepped = _published_mrg31k3p(start.tolist(), e)[1]
        jumped = np.concatenate([mrg._apply_matrix(mrg._matpow_mod(mrg._A1, e, mrg.M1), start.reshape(1, 6)[:, :3],
                                                   mrg.M1, np),
                                 mrg._apply_matrix(mrg._matpow_mod(mrg._A2, e, mrg.M2), start.reshape(1, 6)[:, 3:],
                                                   mrg.M2, np)], axis=1)
        assert jumped[0].tolist() == stepped
    streams = mrg.substreams(start, 5)
    assert streams.shape == (5, 6) and len({tuple(s) for s in streams}) == 5
    twice = mrg.substreams(streams[1], 2)  # stream 2 is stream 1 jumped once more
    assert twice[1].tolist() == streams[2].tolist()
    for bad in (0, -3, mrg.M2, [1, 2, 3]):
        with pytest.raises(ValueError, match="seed"):
            mrg.seed_to_state(bad)


def test_mrg_streams_give_theanos_numbers_for_a_seed():
    """MRG_RandomStreams(234).uniform((2, 2)) in float64: four streams (Theano's guess: one per element up to 6),
    each 2^72 steps apart, from the state [234] * 6 -- computed here from the published recurrence; Theano 0.9's
    own reference functions (rng_mrg.mrg_next_value, A1p72 ...) give the same four numbers."""
    with theano.config.change(floatX="float64"):
        srng = MRG_RandomStreams(seed=234)
        f = theano.function([], srng.uniform((2, 2)))
        first, second = f(), f()
    streams = mrg.substreams(mrg.seed_to_state(234), 4)
    expected = [_published_mrg31k3p(s.tolist(), 2)[0] for s in streams]
    assert first.ravel().tolist() == [e[0] for e in expected]
    assert second.ravel().tolist() == [e[1] for e in expected]
    np.testing.assert_allclose(first, [[0.44990408, 0.30624682], [0.78983548, 0.82554427]], atol=5e-9)
    assert mrg.guess_n_streams((2, 2)) == 4 and mrg.guess_n_streams((60, 10)) == 100
    assert mrg.guess_n_streams((1000, 1000)) == 60 * 256 and mrg.guess_n_streams(T.lvector()) == 60 * 256
    # a second variable starts 2^134 steps later; seed() with no argument goes back to the constructor's seed
    srng.seed()
    assert np.array_equal(f(), first)


@pytest.mark.parametrize("streams", STREAMS)
def test_state_advances_through_default_updates_and_replays_without_them(streams, device):
    srng = streams(seed=234)
    rv = srng.uniform((3, 2))
    f = theano.function([], rv)
    g = theano.function([], rv, no_default_updates=True)
    a, b = f(), f()
    assert a.shape == (3, 2) and a.dtype == np.float32 and not np.array_equal(a, b)
    np.testing.assert_array_equal(g(), g())
    h = theano.function([], rv, no_default_updates=[rv.rng])  # a list names the states not to advance
    np.testing.assert_array_equal(h(), h())
    srng.seed(234)
    np.testing.assert_array_equal(f(), a)  # reseeding replays the stream
    again = streams(seed=234)
    np.testing.assert_array_equal(theano.function([], again.uniform((3, 2)))(), a)
    assert not np.array_equal(theano.function([], streams(seed=235).uniform((3, 2)))(), a)


@pytest.mark.parametrize("streams", STREAMS)
def test_distributions_have_the_right_moments_and_ranges(streams):
    srng = streams(seed=5)
    n = 20000
    f = theano.function([], [srng.uniform((n,), low=-1.0, high=3.0), srng.normal((n,), avg=2.0, std=0.5),
                             srng.binomial((n,), p=0.3), srng.choice(size=(n,), a=3, p=[0.2, 0.5, 0.3]),
                             srng.choice(size=(4,), a=6, replace=False), srng.permutation(size=(3,), n=5)])
    u, z, b, c, c_nr, perm = f()
    assert -1 <= u.min() and u.max() < 3 and abs(u.mean() - 1) < 0.05
    assert abs(z.mean() - 2) < 0.02 and abs(z.std() - 0.5) < 0.02
    assert set(np.unique(b)) <= {0, 1} and abs(b.mean() - 0.3) < 0.02
    np.testing.assert_allclose(np.bincount(c, minlength=3) / n, [0.2, 0.5, 0.3], atol=0.02)
    assert len(set(c_nr)) == 4 and c_nr.max() < 6
    assert perm.shape == (3, 5) and all(sorted(row) == list(range(5)) for row in perm)


@pytest.mark.parametrize("streams", STREAMS)
def test_multinomial_gives_one_hot_counts(streams):
    srng = streams(seed=3)
    pvals = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]] * 200)
    counts = theano.function([], srng.multinomial(n=1, pvals=pvals))()
    assert counts.shape == (400, 3) and (counts.sum(axis=1) == 1).all()
    assert (counts[::2, 1] == 1).all() and counts[1::2, 1].sum() == 0
    assert abs(counts[1::2, 0].mean() - 0.5) < 0.1


def test_mrg_runs_on_the_gpu_device_with_the_same_numbers_as_on_the_cpu():
    results = []
    for device in ("cpu", "sim"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with theano.config.change(device=device):
                srng = MRG_RandomStreams(seed=99)
                f = theano.function([], [srng.uniform((5, 7)), srng.normal((4,)),
                                         srng.multinomial(pvals=np.full((3, 2), 0.5, "float32"))])
                results.append(f() + f())  # two calls: the advanced state too
                ops = [str(n.op) for n in f.toposort()]
        if device == "sim":
            assert "GpuMRGUniform{float32, 2}" in ops and "GpuSearchCDF" in ops
            assert "GpuOneHot" in [type(n.op).__name__ for n in f.toposort()]  # multinomial's counts too
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_mrg_state_stays_on_the_gpu_device_so_a_corrupting_step_moves_nothing():
    """A denoising step on device=sim: the MRG state lives in device memory (GpuMRGUniform reads and updates it
    there) and the mask's size comes from the device value's shape, so the step has no transfer op at all.
    Regression: the int64 state lived on the host (an upload and a download per call). seed() still replays,
    and a function compiled on the CPU still draws the same numbers from the device-resident state."""
    data = np.random.default_rng(3).random((9, 6)).astype("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with theano.config.change(device="sim"):
            x = theano.shared(data, name="x")
            srng = MRG_RandomStreams(seed=21)
            mask = srng.binomial(size=x.shape, n=1, p=0.5, dtype="float32")
            draw = theano.function([], mask)
            step = theano.function([], [], updates={x: x * mask + 0.5})
        names = [type(n.op).__name__ for n in step.toposort()]
        assert "GpuMRGUniform" in names and not {"HostFromGpu", "GpuFromHost"} & set(names), names
        first = np.asarray(draw())
        srng.seed(21)
        np.testing.assert_array_equal(np.asarray(draw()), first)
        with theano.config.change(device="cpu"):
            on_cpu = theano.function([], mask)
        srng.seed(21)
        np.testing.assert_array_equal(on_cpu(), first)
        step()
    assert set(np.unique(x.get_value())) <= {0.5} | set(np.unique(data + 0.5))


def test_corruption_from_a_random_stream_with_a_symbolic_shape():
    srng = RandomStreams(seed=1)
    x = T.fmatrix("x")
    corrupted = srng.binomial(size=x.shape, n=1, p=0.75, dtype=theano.config.floatX) * x
    out = theano.function([x], corrupted)(np.ones((50, 40), "float32"))
    assert out.dtype == np.float32 and set(np.unique(out)) <= {0.0, 1.0} and 0.7 < out.mean() < 0.8


def test_bad_sizes_say_what_to_pass():
    srng = MRG_RandomStreams(seed=1)
    with pytest.raises(TypeError, match=r"size must be a tuple of ints or an integer vector.*size=\(n, m\)"):
        srng.uniform(size=T.fvector("s"))
    with pytest.raises(TypeError, match="size\\[1\\] must be an integer scalar"):
        srng.uniform(size=(2, T.fscalar("n")))
    with pytest.raises(TypeError, match="not known when the graph is built"):
        RandomStreams(seed=1).normal(size=T.lvector("shape"))


def test_random_state_pickles_with_its_stream():
    srng = MRG_RandomStreams(seed=4)
    rv = srng.uniform((3,))
    f = theano.function([], rv)
    f()
    state = rv.rng.get_value()
    clone = pickle.loads(pickle.dumps(rv.rng))
    np.testing.assert_array_equal(clone.get_value(), state)


def test_gradient_through_a_sample_is_undefined_unless_treated_as_data():
    srng = RandomStreams(seed=1)
    mu = T.dscalar("mu")
    sample = srng.normal((3,), avg=mu, dtype="float64")
    with pytest.raises(TypeError, match="no derivative"):
        theano.grad(sample.sum(), mu)
    assert theano.grad((sample * mu).sum(), mu, consider_constant=[sample]) is not None
