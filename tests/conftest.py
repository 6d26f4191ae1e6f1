"""Fixtures shared by several test modules."""
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
