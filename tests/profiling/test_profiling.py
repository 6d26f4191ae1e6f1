"""coursekit.profiling: what is timed, that the tables add up, and the CPU/GPU/transfer line."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import coursekit as theano  # noqa: E402
import coursekit.tensor as T  # noqa: E402
from coursekit import devices, profiling  # noqa: E402
from coursekit.profiling import ProfileStats  # noqa: E402
from fake_gpu_ops import FakeGpuExp, FakeTransfer  # noqa: E402


def small_function(profile=True):
    x = T.fvector("x")
    w = theano.shared(np.ones(5, dtype="float32"), name="w")
    f = theano.function([x], [T.exp(x) * w, T.sum(x)], updates={w: w + 1}, profile=profile, name="small")
    return f, w


def assert_adds_up(profile):
    total = profile.thunk_time
    assert total > 0
    for rows in (profile.class_rows(), profile.op_rows(), profile.apply_rows()):
        assert sum(r["time"] for r in rows) == pytest.approx(total, rel=1e-9)
        assert sum(r["percent"] for r in rows) == pytest.approx(100.0, abs=1e-6)
        assert rows[-1]["cumulative"] == pytest.approx(100.0, abs=1e-6)
    split = profile.device_split()
    assert sum(split[k]["time"] for k in ("cpu", "gpu", "transfer")) == pytest.approx(total, rel=1e-9)
    assert profile.call_time >= profile.thunk_time


def test_first_call_is_excluded_but_counted():
    f, _ = small_function()
    data = np.arange(5, dtype="float32")
    f(data)
    p = f.profile
    assert (p.calls, p.timed_calls, p.thunk_time) == (1, 0, 0.0)
    for _ in range(3):
        f(data)
    assert (p.calls, p.timed_calls) == (4, 3)
    assert all(row["calls"] == 3 for row in p.apply_rows())
    text = p.summary(file="str")
    assert "Calls: 4 (first excluded: 3 timed)" in text
    assert "warm-up" in text


def test_sections_sum_to_the_thunk_total():
    f, _ = small_function()
    for _ in range(5):
        f(np.ones(5, dtype="float32"))
    assert_adds_up(f.profile)
    text = f.profile.summary(file="str")
    for section in ("Function profiling", "Class\n-----", "Ops\n---", "Apply\n-----", "Time by where ops ran"):
        assert section in text
    assert "input 0: dtype=float32, shape=(5,)" in text  # input shapes from the last call
    assert "Ran on: CPU (NumPy)" in text


def test_profiled_error_raises_wrapped_error_and_keeps_shared_values():
    x = T.fmatrix("x")
    w = theano.shared(np.ones(3, dtype="float32"), name="w")
    f = theano.function([x], T.dot(x, w), updates={w: w * 2}, profile=True)
    f(np.ones((2, 3), dtype="float32"))
    with pytest.raises(Exception, match="Apply node that caused the error") as info:
        f(np.ones((2, 4), dtype="float32"))
    assert "Toposort index" in str(info.value)
    np.testing.assert_array_equal(w.get_value(), np.full(3, 2, dtype="float32"))
    assert f.profile.records[0].failed_calls == 1 and f.profile.calls == 1


def test_cpu_gpu_transfer_line_with_bytes_and_synchronisation(monkeypatch):
    synced = []
    monkeypatch.setattr(theano.devices, "synchronize", lambda device=None: synced.append(1))
    x = T.fvector("x")
    on_device = FakeGpuExp()(FakeTransfer("GpuFromHost")(x * 2))
    f = theano.function([x], FakeTransfer("HostFromGpu")(on_device) + 1, profile=True)
    for _ in range(3):
        f(np.ones(4, dtype="float32"))
    p = f.profile
    assert len(synced) == 3 * 3  # after every op with device == "gpu" (transfers included), every call
    split = p.device_split()
    assert split["transfer"]["count"] == 4 and split["transfer"]["bytes"] == 4 * 16
    assert split["gpu"]["applies"] == 1 and split["transfer"]["applies"] == 2
    assert_adds_up(p)
    line = p.device_line()
    assert "CPU ops" in line and "GPU ops" in line and "transfer ops" in line
    assert "4 transfers, 2 per call, 64 B moved" in line
    assert line in p.summary(file="str").splitlines()
    classes = {r["name"]: r["kind"] for r in p.class_rows()}
    assert classes == {"Elemwise": "cpu", "FakeGpuExp": "gpu", "FakeTransfer": "transfer"}


def test_simulated_device_is_labelled_as_cpu_times():
    with theano.config.change(device="sim"):
        f, _ = small_function()
    assert f.device is devices.get("sim")
    f(np.ones(5, dtype="float32"))
    f(np.ones(5, dtype="float32"))
    text = f.profile.summary(file="str")
    assert "simulated GPU (NumPy on the CPU)" in text and "not GPU timings" in text
    assert "not GPU timings" in f.profile._repr_html_()


def test_shared_profile_sums_several_functions():
    shared = ProfileStats("both")
    f, _ = small_function(profile=shared)
    x = T.fvector("x")
    g = theano.function([x], T.tanh(x), profile=shared, name="other")
    for _ in range(3):
        f(np.ones(5, dtype="float32"))
        g(np.ones(5, dtype="float32"))
    assert len(shared.records) == 2 and shared.timed_calls == 4
    assert_adds_up(shared)
    text = shared.summary(file="str")
    assert "Function small" in text and "Function other" in text and "other:0" in text
    assert shared.compile_time > 0


def test_config_profile_prints_at_exit(monkeypatch):
    monkeypatch.setattr(profiling, "_AT_EXIT", [])
    monkeypatch.setattr(profiling, "_registered", True)  # do not add a real atexit hook from a test
    with theano.config.change(profile=True):
        f, _ = small_function(profile=None)
    assert f.profile is not None and profiling._AT_EXIT == [f.profile]
    f(np.ones(5, dtype="float32"))
    f(np.ones(5, dtype="float32"))
    out = io.StringIO()
    profiling.print_pending_profiles(file=out)
    assert "Function profiling" in out.getvalue() and "Time by where ops ran" in out.getvalue()


def test_coursekit_flags_profile_prints_summary_when_the_interpreter_exits():
    script = ("import numpy as np, coursekit as theano, coursekit.tensor as T\n"
              "x = T.fvector('x'); f = theano.function([x], T.exp(x), name='at_exit_fn')\n"
              "for _ in range(3): f(np.ones(3, dtype='float32'))\n")
    env = dict(os.environ, COURSEKIT_FLAGS="profile=True")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Function at_exit_fn" in result.stdout and "Time by where ops ran" in result.stdout


def test_html_and_plot():
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    f, _ = small_function()
    for _ in range(3):
        f(np.ones(5, dtype="float32"))
    page = f.profile._repr_html_()
    assert "<table" in page and "Elemwise" in page and "Time by where ops ran" in page
    for by in ("class", "op", "apply"):
        ax = f.profile.plot(by=by)
        assert isinstance(ax, Axes) and len(ax.patches) == len(getattr(f.profile, f"{by}_rows")())
        plt.close(ax.figure)
    fig, ax = plt.subplots()
    assert f.profile.plot(ax=ax) is ax
    plt.close(fig)


def test_simulated_gpu_profile_counts_real_transfer_ops():
    with theano.config.change(device="sim"):
        x = T.fvector("x")
        w = theano.shared(np.ones(6, dtype="float32"), name="w")
        f = theano.function([x], T.exp(x) * w, profile=True)
        for _ in range(3):
            f(np.ones(6, dtype="float32"))
    p = f.profile
    kinds = {r["name"]: r["kind"] for r in p.class_rows()}
    assert kinds.get("GpuFromHost") == "transfer" and kinds.get("HostFromGpu") == "transfer"
    split = p.device_split()
    assert split["transfer"]["count"] == 2 * 2 and split["transfer"]["bytes"] == 2 * 2 * 6 * 4
    assert_adds_up(p)
    assert p.simulated and "not GPU timings" in p.summary(file="str")
