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


def test_mrg32k3a_matches_lecuyers_reference_output():
    # L'Ecuyer's MRG32k3a with every seed component 12345 starts 0.127011, 0.318528 (to the digits published);
    # a wrong multiplier or modulus gives unrelated numbers
    _, u = mrg.uniform_steps(np.full((1, 6), 12345, dtype=np.int64), 2)
    np.testing.assert_allclose(u, [0.127011, 0.318528], atol=1e-6)


def test_substream_jump_equals_stepping():
    start = mrg.seed_to_state(7)
    streams = mrg.substreams(start, 3)
    assert streams.shape == (3, 6) and len({tuple(s) for s in streams}) == 3
    # the jump matrix is A**(2**76); check the matrix power machinery against plain stepping on a small power
    power = mrg._matpow_mod(mrg._A1, 11, mrg.M1)
    stepped, _ = mrg.uniform_steps(start.reshape(1, 6), 11)
    jumped = mrg._apply_matrix(power, start.reshape(1, 6)[:, :3], mrg.M1, np)
    np.testing.assert_array_equal(jumped[0], stepped[0, :3])


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
