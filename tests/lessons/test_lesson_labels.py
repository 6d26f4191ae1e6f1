"""A timing's label says where the function really ran, whatever COURSEKIT_FLAGS says (issue 14).

Lesson 2 passed ``device=device_label()`` for its CPU row; with ``device=gpu`` set globally that
labelled a CPU timing as a simulated-GPU one.
"""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.lessons import time_call


def compiled(device, dtype="float32"):
    with theano.config.change(device=device), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # float64 on a GPU device warns; not what this test is about
        x = theano.shared(np.ones(5, dtype=dtype), name="x")
        return theano.function([], T.exp(x), name=f"exp_{device}_{dtype}")


def test_a_compiled_functions_own_device_beats_the_callers_label():
    with theano.config.change(device="sim"):
        wrong_label = "device=sim: simulated GPU (NumPy on the CPU)"
        timing = time_call(compiled("cpu"), device=wrong_label, repeat=1, number=1, model=False)
    assert timing.device == "CPU (NumPy)" and not timing.simulated


def test_gpu_rows_say_simulated_and_host_only_graphs_say_cpu():
    gpu = time_call(compiled("sim"), repeat=1, number=1, model=False)
    assert gpu.simulated and "simulated" in gpu.device
    host_only = time_call(compiled("sim", "float64"), repeat=1, number=1, model=False)
    assert host_only.device == "CPU (NumPy)", "float64 stays on the host: that row ran on the CPU"


def test_plain_callables_keep_the_label_they_are_given():
    timing = time_call(np.exp, np.ones(3), device="NumPy on the CPU", repeat=1, number=1)
    assert timing.device == "NumPy on the CPU"


def test_load_digits_gives_what_scikit_learn_gives_without_importing_it():
    import subprocess
    import sys

    sklearn = pytest.importorskip("sklearn.datasets")
    from coursekit.lessons import load_digits

    ours, theirs = load_digits(), sklearn.load_digits()
    for name in ("data", "target", "images"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype
    script = "import sys; from coursekit.lessons import load_digits; load_digits(); print('sklearn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stdout.strip() == "False"
