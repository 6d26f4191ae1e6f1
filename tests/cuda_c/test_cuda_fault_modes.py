"""Emulator faults are named the same way in every check mode, and stop the way a student stops them (issue 13).

``test_cuda_safety.py`` shows each protection once; here the same faults go through all four check
levels (``False``, ``"races"``, ``"memory"``, ``True``), Ctrl-C reaches a checked launch too, an endless
kernel is stopped by a real Jupyter interrupt and the kernel keeps working, and the grader's own
environment catches an off-by-one that slack after an array hides from an unchecked launch.  The kernels
are ``test_cuda_safety.SOURCE`` (the compile cache makes them free here).
"""
import os
import signal
import sys
import threading
import time

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit import cuda, devices
from coursekit.course.grading.grader import GRADING_ENV, grade_notebook, load_reference
from coursekit.cuda import checked as checked_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cuda_safety import SOURCE  # noqa: E402  (shares its kernels and builds)

HERE = os.path.basename(__file__)
MODES = [False, "races", "memory", True]
# kernel: (arguments, block, error class, what the message names, the student's line or lines)
FAULTS = {
    "divide": (lambda: (cuda.Out(np.zeros(4, np.int32)), np.int32(2)), 4, cuda.IntegerDivisionError,
               "integer division (or %) by zero", 29),
    "recurse": (lambda: (cuda.Out(np.zeros(4, np.int32)), np.int32(1_000_000)), 4, cuda.StackOverflowError,
                "stack overflow", range(2, 8)),
    "huge_locals": (lambda: (cuda.Out(np.zeros(4, np.float32)),), 4, cuda.StackOverflowError, "stack overflow",
                    range(16, 22)),
    "off_by_one": (lambda: (cuda.Out(np.zeros(100, np.float32)), np.int32(100)), 128, cuda.MemoryAccessError,
                   "out-of-bounds write on argument `x` at index 100", 34),
    "read_past": (lambda: (cuda.In(np.zeros(10, np.float32)), cuda.Out(np.zeros(10, np.float32)), np.int32(10)),
                  16, cuda.MemoryAccessError, "out-of-bounds read on argument `x` at index 10", 39),
}


@pytest.fixture(scope="module")
def mod():
    return cuda.SourceModule(SOURCE, backend="emulator")


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("kernel", list(FAULTS))
def test_each_fault_is_named_with_the_students_line_in_every_mode(mod, kernel, mode):
    make_args, threads, error, named, line = FAULTS[kernel]
    with pytest.raises(error) as e:
        mod.get_function(kernel)(*make_args(), block=(threads, 1, 1), check=mode)
    msg = str(e.value)
    assert f"kernel `{kernel}`: {named}" in msg
    if isinstance(line, range):    # where in the function a stack overflow faults is g++'s choice
        assert e.value.line in line
    else:
        assert e.value.line == line
    shown = SOURCE.splitlines()[e.value.line - 1].strip()
    assert f"on line {e.value.line} of your source:\n    {shown}\n" in msg and shown != "{"
    assert f"launched from {__file__}" in msg
    assert ("checked mode" in msg) == (mode in ("memory", True))
    assert "AddressSanitizer:" not in msg and "==ERROR" not in msg


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_120_kb_of_locals_fit_in_every_mode(mod, mode):
    """A GPU allows 512 KiB of local memory per thread; AddressSanitizer's red zones must fit too."""
    out = np.zeros(8, np.float32)
    mod.get_function("big_locals")(cuda.Out(out), np.int32(3), block=(8, 1, 1), check=mode)
    np.testing.assert_array_equal(out, [sum(float((k * 7919) % 30000 + t) for k in range(3)) for t in range(8)])


@pytest.mark.usefixtures("sigint_reaches_python")
def test_ctrl_c_stops_a_checked_launch_and_names_it(mod):
    """The subprocess dies with the interrupt; the error says which launch, as the in-process one does."""
    timer = threading.Thread(target=lambda: (time.sleep(1.0), os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt, match=r"kernel `spin` was interrupted(?s:.*)checked mode"):
            mod.get_function("spin")(cuda.In(np.zeros(1, np.int32)), block=(8, 1, 1), timeout=60, check="memory")
    finally:
        timer.join()
    out = np.zeros(100, np.float32)
    mod.get_function("off_by_one")(cuda.Out(out), np.int32(99), block=(100, 1, 1), check="memory")
    assert out.sum() == 100


def test_watchdog_stops_a_checked_launch(mod):
    with pytest.raises(cuda.KernelTimeoutError, match=r"kernel `spin` was stopped by the emulator's watchdog after "
                                                      r"0.5 s(?s:.*)checked mode"):
        mod.get_function("spin")(cuda.In(np.zeros(1, np.int32)), block=(8, 1, 1), timeout=0.5, check="memory")


def test_a_checked_failure_without_a_report_never_shows_the_raw_text(mod, tmp_path, monkeypatch):
    """A sanitizer that dies in a way coursekit does not know: its text goes to .report, not the message."""
    fake = tmp_path / "fake-asan"
    fake.write_text("#!/bin/sh\necho '==4242==AddressSanitizer: CHECK failed: asan_rtl.cpp:1 \"((x)) != (0)\"' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(checked_module, "_executable", lambda module: fake)
    with pytest.raises(cuda.KernelRuntimeError) as e:
        mod.get_function("off_by_one")(cuda.Out(np.zeros(4, np.float32)), np.int32(3), block=(4, 1, 1),
                                       check="memory")
    msg = str(e.value)
    assert "kernel `off_by_one`: the checked launch" in msg and "exit status 1" in msg and ".report" in msg
    assert "==4242==" not in msg and "CHECK failed" not in msg and "CHECK failed" in e.value.report
    assert f"launched from {__file__}" in msg


# -- a real Jupyter kernel: Kernel -> Interrupt ---------------------------------------------
JUPYTER_SETUP = f"""
import sys
import numpy as np
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from coursekit import cuda
from test_cuda_safety import SOURCE
mod = cuda.SourceModule(SOURCE, backend="emulator")
"""
SPIN = 'mod.get_function("spin")(cuda.In(np.zeros(1, np.int32)), block=(32, 1, 1), timeout=60, check={check})'
USABLE = ('x = np.zeros(100, np.float32); mod.get_function("off_by_one")(cuda.Out(x), np.int32(99), '
          'block=(100, 1, 1)); print("SUM", x.sum())')


@pytest.fixture(scope="module")
def jupyter():
    from jupyter_client.manager import start_new_kernel
    manager, client = start_new_kernel(kernel_name="python3", env=dict(os.environ))
    try:
        assert client.execute_interactive(JUPYTER_SETUP, timeout=120)["content"]["status"] == "ok"
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run_until_interrupted(manager, client, code):
    """Start ``code``, interrupt the kernel once the launch runs, return (error message, seconds it took to stop)."""
    msg_id = client.execute(code)
    for _ in range(600):                        # the launch prints nothing: wait for the cell to be busy
        msg = client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["content"].get("execution_state") == "busy":
            break
    time.sleep(1.0)                              # well inside the launch (its module is already built)
    start = time.monotonic()
    manager.interrupt_kernel()
    while True:
        msg = client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "error":
            stopped = time.monotonic() - start
            break
    client.get_shell_msg(timeout=30)
    return msg["content"], stopped


@pytest.mark.slow
@pytest.mark.parametrize("check", ["False"])
def test_jupyters_interrupt_stops_an_endless_kernel_and_the_session_goes_on(jupyter, check, capfd):
    """Stopped by the interrupt, not by the 60 s watchdog; the next cell launches kernels as before.
    (A checked launch meets the interrupt in the grading test below: grading runs checked mode.)"""
    manager, client = jupyter
    error, stopped = run_until_interrupted(manager, client, SPIN.format(check=check))
    assert error["ename"] == "KeyboardInterrupt", error
    assert "kernel `spin` was interrupted" in error["evalue"]
    assert stopped < 30, f"the interrupt took {stopped:.1f} s"         # far below the watchdog's 60 s
    with capfd.disabled():
        print(f"\n[measured] Jupyter interrupt -> error, check={check}: {stopped:.2f} s")
    outputs = []
    for _ in range(20):      # ipykernel aborts requests that arrive just after an error (stop_on_error): ask again
        reply = client.execute_interactive(USABLE, timeout=60, output_hook=outputs.append)
        if reply["content"]["status"] != "aborted":
            break
        time.sleep(0.1)
    assert reply["content"]["status"] == "ok"
    assert any("SUM 100.0" in m["content"].get("text", "") for m in outputs)


# -- grading runs checked mode --------------------------------------------------------------
def padded_device_array(n):
    """A device array of n float32 zeros followed by slack (as memory from an allocator has), and the whole buffer."""
    whole = np.zeros(n + 16, np.float32)
    return devices.get("sim").wrap(whole[:n]), whole


def test_slack_after_an_array_hides_an_off_by_one_unless_checked(mod, monkeypatch):
    """The grader's environment turns the check on: the same launch that passes unchecked is an error."""
    kernel = mod.get_function("off_by_one")
    x, whole = padded_device_array(100)
    kernel(x, np.int32(100), block=(128, 1, 1))          # unchecked: nothing sees it, and the slack changed
    assert (x.get() == 1).all() and whole[100] == 1
    monkeypatch.setenv("COURSEKIT_CUDA_CHECK", GRADING_ENV["COURSEKIT_CUDA_CHECK"])
    checked_mod = cuda.SourceModule(SOURCE, backend="emulator")      # the environment sets a module's default
    x, whole = padded_device_array(100)
    with pytest.raises(cuda.MemoryAccessError, match=r"out-of-bounds write on argument `x` at index 100\b"):
        checked_mod.get_function("off_by_one")(x, np.int32(100), block=(128, 1, 1))
    assert whole[100] == 0


GRADED_SETUP = f"""
import numpy as np
from coursekit import cuda, devices
SOURCE = r'''{SOURCE}'''
module = cuda.SourceModule(SOURCE)
fill, spin = module.get_function("off_by_one"), module.get_function("spin")
"""
SPIN_CELL = """
spin(cuda.In(np.zeros(1, np.int32)), block=(32, 1, 1))   # a spin-wait nobody releases (watchdog: 20 s)
"""
EDGE = """
whole = np.zeros(116, np.float32)               # slack after the array, as an allocator leaves
x = devices.get("sim").wrap(whole[:100])
fill(x, np.int32(100), block=(128, 1, 1))       # `if (i <= n)`: one element too many
assert (x.get() == 1).all()
"""
LATER = """
y = cuda.zeros(100, np.float32)
fill(y, np.int32(99), block=(100, 1, 1))
assert y.get().sum() == 100
"""


def graded(source, cell_id):
    return new_code_cell(source, metadata={"tags": ["graded"], "coursekit": {"id": cell_id, "points": 2}})


@pytest.mark.slow
def test_grading_catches_an_off_by_one_hidden_by_slack_and_later_tasks_still_score(tmp_path, monkeypatch):
    """Checked mode in the grader; and an endless kernel costs its own cell: the per-cell timeout's interrupt
    stops it (in the issue, one spin-wait experiment ran a notebook into its 600 s limit)."""
    cells = [GRADED_SETUP, graded(SPIN_CELL, "spin"), graded(EDGE, "edge"), graded(LATER, "later")]
    nb = new_notebook(cells=[c if not isinstance(c, str) else new_code_cell(c) for c in cells])
    path = tmp_path / "07_edge.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setenv("COURSEKIT_NO_NVCC", "1")
    # The limit applies to the set-up cell's compilations too: 4 s timed them out under load. 12 s leaves
    # them room and still stops the spin-wait long before the emulator's own 20 s kernel timeout.
    scores = {s.cell_id: s for s in grade_notebook(path, load_reference(path), cell_timeout=12, notebook_timeout=180)}
    spin, edge, later = scores["spin"], scores["edge"], scores["later"]
    assert spin.points == 0 and spin.reason.startswith("timeout after 12s"), spin.reason
    assert edge.points == 0 and edge.reason.startswith("error: MemoryAccessError"), edge.reason
    assert "argument `x` at index 100" in edge.reason, edge.reason
    assert later.points == 2 and later.reason == "passed", later.reason


@pytest.mark.usefixtures("sigint_reaches_python")
def test_a_checked_subprocess_ended_by_sigint_is_an_interrupt_naming_the_kernel(mod, tmp_path, monkeypatch):
    """Jupyter signals the whole process group, so the checked child may die of SIGINT before Python sees it."""
    fake = tmp_path / "interrupted-child"
    fake.write_text("#!/bin/sh\nkill -INT $$\n")
    fake.chmod(0o755)
    monkeypatch.setattr(checked_module, "_executable", lambda module: fake)
    with pytest.raises(KeyboardInterrupt, match=r"kernel `off_by_one` was interrupted(?s:.*)checked mode"):
        mod.get_function("off_by_one")(cuda.Out(np.zeros(4, np.float32)), np.int32(3), block=(4, 1, 1),
                                       check="memory")
