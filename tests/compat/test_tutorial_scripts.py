"""The tutorial's own scripts run with only their imports changed."""
import os
import subprocess
import sys
from pathlib import Path


SCRIPTS = Path(__file__).resolve().parents[1] / "tutorial_scripts"


def run_script(name, flags="", seed=1234):
    code = (f"import numpy, runpy; numpy.random.seed({seed}); "
            f"g = runpy.run_path({str(SCRIPTS / name)!r}); "
            "import numpy as np; print('ACCURACY', float((g['predict'](g['D'][0]) == g['D'][1]).mean()), "
            "bool(np.isfinite(g['w'].get_value()).all()))")
    env = dict(os.environ, COURSEKIT_FLAGS=flags)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_logistic_regression_on_cpu_reaches_accuracy_one():
    out = run_script("logistic_regression.py", "device=cpu,floatX=float32")
    assert "Used the cpu" in out
    accuracy_line = [line for line in out.splitlines() if line.startswith("ACCURACY")][0]
    _, accuracy, finite = accuracy_line.split()
    assert float(accuracy) == 1.0 and finite == "True"


def test_logistic_regression_float64_also_trains():
    out = run_script("logistic_regression.py", "device=cpu,floatX=float64", seed=7)
    assert "Used the cpu" in out and "ACCURACY 1.0 True" in out


def run_plain(name, flags):
    env = dict(os.environ, COURSEKIT_FLAGS=flags)
    return subprocess.run([sys.executable, str(SCRIPTS / name)], env=env, capture_output=True, text=True, timeout=600)


def test_the_tutorials_pycuda_op_runs_on_a_gpu_device():
    """The Theano + PyCUDA example: its make_node asks for gpu_contiguous inputs, its 4-argument make_thunk
    launches a kernel (here on the CPU emulator) into CudaNdarray.zeros, and numpy.asarray prints the result."""
    for flags in ("device=sim", "device=gpu"):
        out = run_plain("pycuda_double_op.py", flags)
        assert out.returncode == 0, out.stderr
        rows = [line for line in out.stdout.splitlines() if line.strip()]
        assert len(rows) == 4 and all(line.replace("[", "").replace("]", "").split() == ["2."] * 5 for line in rows)


def test_the_tutorials_pycuda_op_on_the_cpu_says_what_to_do():
    out = run_plain("pycuda_double_op.py", "device=cpu")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert "DeviceError: PyCUDADoubleOp works on device memory" in last
    assert "pycuda_double_op.py\", line 43: f = theano.function([x], PyCUDADoubleOp()(x))" in last
    assert "device='sim'" in last
