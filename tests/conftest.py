"""Fixtures shared by several test modules."""
import signal
import warnings

import pytest

import coursekit as theano


@pytest.fixture(params=["cpu", "sim"])
def device(request):
    """Run the test once on the CPU and once on the simulated GPU (its fallback warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with theano.config.change(device=request.param):
            yield request.param


@pytest.fixture
def sigint_reaches_python():
    """Install Python's own SIGINT handler for a Ctrl-C test, and put the old one back after.

    A process started in the background by a non-interactive shell (``cmd &`` in a script, as a CI
    runner may do) inherits SIGINT *ignored*, and Python then leaves it ignored: no Ctrl-C could reach
    it at all. Terminals and Jupyter kernels have the handler; the tests check what happens then.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
