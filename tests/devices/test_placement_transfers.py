"""Transfers placement puts in a compiled graph, COUNTED (transfer ops in the graph, copies on the CuPy stand-in).

Shape arithmetic stays on the host, as Theano's optimiser kept it, and ``MakeVector`` follows its inputs
(``PLACEMENT_RULES`` in coursekit/rewriting/placement.py): found on lesson 10, where ``flatten(2)`` sent a
shape to the device and back, and ``T.stack`` of two device sums brought each sum home on its own."""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
import cupy_standin
from coursekit.devices.transfer import GpuFromHost, HostFromGpu
from cupy_standin import counting


@pytest.fixture(params=["gpu", "cuda"])
def device(request):
    """The simulated GPU and coursekit's CuPy code path on the stand-in."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.installed(), theano.config.change(device=request.param, floatX="float32"):
            yield request.param


def transfers(f):
    nodes = f.maker.fgraph.toposort()
    return (sum(isinstance(n.op, GpuFromHost) for n in nodes), sum(isinstance(n.op, HostFromGpu) for n in nodes))


def placed_on(f, name):
    return [getattr(n.op, "device", "cpu") for n in f.maker.fgraph.toposort() if name in type(n.op).__name__]


def test_flatten_reads_the_shape_on_the_host(device):
    x = T.ftensor3("x")
    f = theano.function([x], T.exp(x).flatten(2))
    assert transfers(f) == (1, 1), theano.printing.debugprint(f, file="str")   # x in, the result out
    assert placed_on(f, "Subtensor") == ["cpu"] and placed_on(f, "MakeVector") == ["cpu"]
    xv = np.random.default_rng(0).random((2, 3, 4)).astype("float32")
    np.testing.assert_allclose(f(xv), np.exp(xv).reshape(2, 12), rtol=1e-6)


def test_shape_arithmetic_stays_on_the_host(device):
    x = T.fmatrix("x")
    f = theano.function([x], T.exp(x).reshape((x.shape[0] * x.shape[1],)))
    assert transfers(f) == (1, 1), theano.printing.debugprint(f, file="str")
    xv = np.ones((3, 5), "float32")
    np.testing.assert_allclose(f(xv), np.exp(xv).ravel(), rtol=1e-6)


def test_stack_of_two_device_scalars_runs_on_the_device(device):
    a, b = T.fvector("a"), T.fvector("b")
    f = theano.function([a, b], T.stack([T.exp(a).sum(), T.exp(b).sum()]))
    assert transfers(f) == (2, 1), theano.printing.debugprint(f, file="str")   # a and b in, one vector out
    assert placed_on(f, "MakeVector") == ["gpu"]
    av, bv = np.arange(3, dtype="float32"), np.ones(2, "float32")
    f(av, bv)
    with counting() as c:
        r = f(av, bv)
    if device == "cuda":
        assert (c.h2d, c.d2h) == (2, 1), c
    np.testing.assert_allclose(r, [np.exp(av).sum(), np.exp(bv).sum()], rtol=1e-6)


def test_stack_of_host_scalars_stays_on_the_host(device):
    a, b = T.fscalar("a"), T.fscalar("b")
    f = theano.function([a, b], T.stack([a, b]))
    assert transfers(f) == (0, 0) and placed_on(f, "MakeVector") == ["cpu"]
    np.testing.assert_array_equal(f(np.float32(1), np.float32(2)), [1, 2])


def test_without_the_rules_the_shape_went_to_the_device_and_back(device):
    """What the rules save, counted: the same graph with the placement of lesson 10's first run."""
    from coursekit.rewriting import placement
    x = T.ftensor3("x")
    rules = placement.PLACEMENT_RULES
    try:
        placement.PLACEMENT_RULES = ()
        f = theano.function([x], T.exp(x).flatten(2))
    finally:
        placement.PLACEMENT_RULES = rules
    assert transfers(f) == (2, 2), theano.printing.debugprint(f, file="str")
