"""``numpy.asarray(device_result)`` is an explicit copy to the host, as with Theano's CudaNdarray (issue 12).

The tutorial's check2.py and check3.py print ``numpy.asarray(r)`` of a handle.  The copy happens
outside the compiled function: the function's profile never counts it as one of its transfers.  On a
real GPU results are CuPy arrays of a small subclass (coursekit/devices/handles.py) that does the same;
its logic is tested here without a GPU, and with CuPy by the gpu-marked tests (skipped without a GPU).
"""
import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T
from coursekit.devices import SimDevice
from coursekit.devices.handles import handing_out, handle_class


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


# ------------------------------------------------------------ a real GPU's results: handles
# The handle's own logic, checked without a GPU: ``FakeCupyArray`` stands in for ``cupy.ndarray`` (it refuses
# numpy.asarray as CuPy does, .get() copies).  What CuPy itself does with a handle is checked by the
# gpu-marked tests below, which run only where CuPy sees a GPU.
class FakeCupyArray:
    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = np.array(data)

    def get(self):
        return self._data.copy()

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

    def view(self, array_class):
        view = object.__new__(array_class)
        view._data = self._data
        return view


def test_a_handle_copies_home_where_its_base_class_refuses():
    values = np.arange(6, dtype="float32").reshape(2, 3)
    buffer = FakeCupyArray(values)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(buffer)
    handle = buffer.view(handle_class(FakeCupyArray))
    assert handle_class(FakeCupyArray) is type(handle)  # made once per base class
    host = np.asarray(handle)
    assert type(host) is np.ndarray and host.dtype == np.float32
    np.testing.assert_array_equal(host, values)
    host[...] = -1  # a copy: the device data is untouched
    np.testing.assert_array_equal(handle.get(), values)
    assert np.asarray(handle, dtype="float64").dtype == np.float64
    np.testing.assert_array_equal(np.array(handle), values)
    with pytest.raises(ValueError, match="copy=False.*device memory.*get"):
        np.asarray(handle, copy=False)
    assert devices.is_device_array(handle)  # still device memory everywhere coursekit asks


def test_a_handle_given_to_a_host_input_is_refused_not_copied():
    x = T.fvector("x")
    f = theano.function([x], x + 1)
    handle = FakeCupyArray(np.ones(3, "float32")).view(handle_class(FakeCupyArray))
    with pytest.raises(TypeError, match="device array.*get"):
        f(handle)


def test_a_borrowed_output_keeps_its_handle_while_its_buffer_is_the_same():
    cls = handle_class(FakeCupyArray)
    first, second = FakeCupyArray([1.0]), FakeCupyArray([2.0])
    plain, borrowed = handing_out(cls, borrowed=False), handing_out(cls, borrowed=True)
    assert type(plain(first)) is cls and plain(first) is not plain(first)  # a new handle per call
    assert type(borrowed(first)) is cls and borrowed(first) is borrowed(first)
    assert borrowed(second) is not borrowed(first) and np.asarray(borrowed(second))[0] == 2


def test_outputs_pass_through_the_devices_hand_out_only_where_it_has_one(device, monkeypatch):
    f = handle_function(np.ones(3, "float32"))
    assert "handle0" not in f.source  # cpu and the simulated GPU return results as they are: no extra step
    monkeypatch.setattr(SimDevice, "output_handle", lambda self, borrowed: lambda r: ("handed out", borrowed, r))
    x = theano.shared(np.ones(3, "float32"))
    both = theano.function([], [theano.gpu_from_host(T.exp(x)), theano.Out(theano.gpu_from_host(x * 2), borrow=True),
                                T.exp(x)])
    device_result, borrowed_result, host_result = both()
    if device == "sim":
        assert "r0 = handle0(r0)" in both.source and "handle2" not in both.source  # the host output: as it is
        assert device_result[:2] == ("handed out", False) and borrowed_result[:2] == ("handed out", True)
        np.testing.assert_allclose(device_result[2].get(), np.e, rtol=1e-6)
    else:
        assert "handle" not in both.source and type(device_result) is np.ndarray
    assert type(host_result) is np.ndarray


# CuPy's code path: on a real GPU where CuPy sees one (marked gpu), else on the CuPy stand-in (tests/cupy_standin)
on_cupy = pytest.mark.gpu if cupy_standin.real_gpu() else pytest.mark.usefixtures("cuda")


@pytest.fixture
def cuda():
    with cupy_standin.on("cuda"), theano.config.change(device="cuda"):
        yield devices.current()


@on_cupy
@pytest.mark.parametrize("borrow", [False, True])
def test_on_a_real_gpu_asarray_of_a_result_is_a_host_copy(cuda, borrow):
    import cupy

    values = np.random.default_rng(5).standard_normal((7, 3)).astype("float32")
    out = theano.gpu_from_host(T.exp(theano.shared(values)))
    f = theano.function([], theano.Out(out, borrow=True) if borrow else out)
    r = f()
    assert isinstance(r, cupy.ndarray) and cuda.is_device_array(r) and (f() is r) == borrow
    host = np.asarray(r)
    assert type(host) is np.ndarray and host.dtype == np.float32
    np.testing.assert_allclose(host, np.exp(values), rtol=1e-6)
    host[...] = -1  # a copy: the device result is untouched
    np.testing.assert_allclose(r.get(), np.exp(values), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(r, dtype="float64"), np.exp(values.astype("float64")), rtol=1e-6)
    np.testing.assert_allclose(np.array(r), np.exp(values), rtol=1e-6)
    np.testing.assert_allclose(cupy.asnumpy(cupy.exp(r)), np.exp(np.exp(values)), rtol=1e-5)  # CuPy's own
    with pytest.raises(ValueError, match="copy=False.*device memory.*get"):
        np.asarray(r, copy=False)


@on_cupy
def test_on_a_real_gpu_host_device_mixups_stay_refused(cuda):
    r = handle_function(np.ones(4, "float32"))()
    host = np.ones(4, "float32")
    with pytest.raises(TypeError):  # CuPy's refusal: NumPy arithmetic mixing host and device arrays
        r + host
    with pytest.raises(TypeError):
        host + r
    with pytest.raises(TypeError, match="already in .* memory"):
        cuda.to_device(r)
    x = T.fvector("x")
    add_one = theano.function([x], x + 1)  # a host input: a device array given to it is refused, not copied
    with pytest.raises(TypeError, match="device array.*get"):
        add_one(r)


@on_cupy
def test_on_a_real_gpu_the_profile_never_counts_the_users_copy(cuda):
    values = np.linspace(0, 1, 50, dtype="float32")
    f = handle_function(values, profile=True)
    plain = theano.function([], T.exp(theano.shared(values)), profile=True)  # copies home inside the call
    for _ in range(4):
        np.asarray(f())
        np.asarray(f())  # twice per call: if the copy counted, the count would not be 0
        plain()
    handle_split, plain_split = f.profile.device_split(), plain.profile.device_split()
    assert handle_split["transfer"]["count"] == 0 and handle_split["transfer"]["bytes"] == 0
    count = plain_split["transfer"]["count"]  # the profiler does count transfers on this device
    assert count > 0 and plain_split["transfer"]["bytes"] == count * values.nbytes


@on_cupy
def test_on_a_real_gpu_get_value_of_the_device_array_copies_home_too(cuda):
    x = theano.shared(np.arange(5, dtype="float32"), name="x")
    for borrow in (False, True):
        inside = x.get_value(borrow=borrow, return_internal_type=True)
        assert cuda.is_device_array(inside)
        np.testing.assert_array_equal(np.asarray(inside), np.arange(5))
    x.get_value(borrow=True, return_internal_type=True)[0] = 7  # borrow: the very device memory
    assert x.get_value()[0] == 7
