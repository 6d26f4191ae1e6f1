"""``numpy.asarray(device_result)`` is an explicit copy to the host, as with Theano's CudaNdarray (issue 12).

The tutorial's check2.py and check3.py print ``numpy.asarray(r)`` of a handle.  The copy happens
outside the compiled function: the function's profile never counts it as one of its transfers.
"""
import numpy as np
import pytest

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T


def handle_function(values, **kw):
    x = theano.shared(values, name="x")
    return theano.function([], theano.gpu_from_host(T.exp(x)), **kw)


def test_asarray_of_a_result_is_a_host_copy_with_numpys_values(device):
    values = np.random.default_rng(5).standard_normal((7, 3)).astype("float32")
    f = handle_function(values)
    r = f()
    assert devices.is_device_array(r) == (device == "sim")
    host = np.asarray(r)
    assert type(host) is np.ndarray and host.dtype == np.float32 and host.shape == (7, 3)
    np.testing.assert_allclose(host, np.exp(values), rtol=1e-6)
    if device == "sim":  # a copy: writing it leaves the device result alone
        host[...] = -1
        np.testing.assert_allclose(np.asarray(r), np.exp(values), rtol=1e-6)
    else:  # on the CPU the result already is a NumPy array, and numpy.asarray returns it as it is
        assert host is r
    np.testing.assert_allclose(np.asarray(r, dtype="float64"), np.exp(values.astype("float64")), rtol=1e-6)
    np.testing.assert_allclose(np.array(r), np.exp(values), rtol=1e-6)


def test_the_profile_never_counts_the_users_copy_as_the_functions_transfer(device):
    values = np.linspace(0, 1, 50, dtype="float32")
    f = handle_function(values, profile=True)
    plain = theano.function([], T.exp(theano.shared(values)), profile=True)  # copies home inside the call
    for _ in range(4):
        np.asarray(f())
        np.asarray(f())  # twice per call: if the copy counted, the counts would double
        plain()
    handle_split, plain_split = f.profile.device_split(), plain.profile.device_split()
    assert handle_split["transfer"]["count"] == 0 and handle_split["transfer"]["bytes"] == 0
    if device == "sim":  # the function that copies home counts its own transfer, once per timed call
        assert plain_split["transfer"]["count"] == 3 and plain_split["transfer"]["bytes"] == 3 * values.nbytes
    else:
        assert plain_split["transfer"]["count"] == 0


def test_arithmetic_with_host_arrays_and_views_stay_refused():
    with theano.config.change(device="sim"):
        r = handle_function(np.ones(4, "float32"))()
    with pytest.raises(TypeError, match="device memory.*get"):
        r + np.ones(4, "float32")
    with pytest.raises(ValueError, match="copy=False.*device memory.*get"):
        np.asarray(r, copy=False)
    with pytest.raises(TypeError, match="already in the simulated GPU's memory"):
        devices.get("sim").to_device(r)
