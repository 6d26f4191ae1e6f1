"""Old Theano scripts and the float64 default (issue 12).

Theano's floatX defaulted to float64; coursekit's is float32 (docs/theano-scripts.md says why).  A script
says which it wants through THEANO_FLAGS/COURSEKIT_FLAGS or ``config.floatX``; a script that assumed float64
without saying so fails with an error that names its line and this remedy, and float64 entering a GPU graph
is one warning naming where it enters.
"""
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T

SCRIPTS = Path(__file__).resolve().parents[1] / "tutorial_scripts"


def run(code_or_script, **env):
    args = [str(SCRIPTS / code_or_script)] if code_or_script.endswith(".py") else ["-c", code_or_script]
    environ = {k: v for k, v in os.environ.items() if k not in ("THEANO_FLAGS", "COURSEKIT_FLAGS")}
    return subprocess.run([sys.executable, *args], env=dict(environ, **env), capture_output=True, text=True,
                          timeout=120)


def test_theano_flags_are_read_and_coursekit_flags_win():
    code = "import coursekit as t; print(t.config.floatX, t.config.device, t.config.allow_gc)"
    assert run(code, THEANO_FLAGS="floatX=float64,device=gpu0,allow_gc=False").stdout.split() == \
        ["float64", "cuda:0", "False"]
    assert run(code, THEANO_FLAGS="floatX=float64,allow_gc=False", COURSEKIT_FLAGS="floatX=float32").stdout.split() \
        == ["float32", "cpu", "False"]
    bad = run(code, THEANO_FLAGS="floatx=float64")
    assert bad.returncode != 0 and "THEANO_FLAGS: unknown flag 'floatx'" in bad.stderr and "'floatX'" in bad.stderr


def test_the_slides_test_value_script_runs_with_theanos_default():
    out = run("slides_test_value.py", THEANO_FLAGS="floatX=float64")
    assert out.returncode == 0, out.stderr
    assert "test value of gram: (5, 5) float64" in out.stdout


def test_without_it_the_error_names_the_line_and_the_remedy():
    out = run("slides_test_value.py")
    last = out.stderr.strip().splitlines()[-1]
    assert out.returncode != 0 and last.startswith("TypeError: the test value of x")
    assert 'slides_test_value.py", line 16: gram = T.dot(x, x.T)' in last
    assert "whose floatX defaulted to float64" in last and "THEANO_FLAGS=floatX=float64" in last


def test_a_float64_argument_for_a_floatx_input_gives_the_hint_only_when_it_applies():
    x = T.matrix("x")
    f = theano.function([x], x * 2)
    with pytest.raises(TypeError, match="got a float64 value.*floatX defaulted to float64.*COURSEKIT_FLAGS=floatX"):
        f(np.ones((2, 2)))
    i = T.imatrix("i")
    g = theano.function([i], i * 2)
    with pytest.raises(TypeError, match="got a int64 value") as info:
        g(np.ones((2, 2), dtype="int64"))
    assert "floatX" not in str(info.value)
    with theano.config.change(floatX="float64"):
        x64 = T.matrix("x")  # what the old script meant
        np.testing.assert_array_equal(theano.function([x64], x64 * 2)(np.ones((2, 2))), 2 * np.ones((2, 2)))


def test_float64_entering_a_gpu_graph_is_one_warning_naming_where_it_enters():
    with theano.config.change(device="sim"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = T.matrix("x")
        W = theano.shared(np.random.default_rng(0).standard_normal((3, 2)), name="W")  # float64, as in old scripts
        h = T.tanh(T.dot(x, W))
        caught.clear()
        f = theano.function([x], h)
    messages = [str(w.message) for w in caught if "compute in float64" in str(w.message)]
    assert len(messages) == 1
    assert "float64 enters the graph at W (File" in messages[0] and 'name="W")' in messages[0]
    assert caught[-1].filename == __file__
    v = np.ones((4, 3), "float32")
    np.testing.assert_allclose(f(v), np.tanh(v @ W.get_value()))
