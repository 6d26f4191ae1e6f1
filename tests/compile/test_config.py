"""config: flags, COURSEKIT_FLAGS, config.change."""
import os
import subprocess
import sys

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.config import Config


def test_defaults():
    assert theano.config.floatX == "float32"
    assert theano.config.device == "cpu"
    assert T.vector().dtype == "float32"


def test_change_is_temporary_and_restores_on_error():
    with theano.config.change(floatX="float64"):
        assert T.vector().dtype == "float64"
    assert theano.config.floatX == "float32"
    with pytest.raises(RuntimeError):
        with theano.config.change(floatX="float64"):
            raise RuntimeError
    assert theano.config.floatX == "float32"


@pytest.mark.parametrize("flags, match", [
    ("floatX=float8", "float32"),
    ("devise=cpu", "unknown flag 'devise'.*valid flags"),
    ("device=tpu", "cpu.*gpu.*sim"),
    ("mode=FAST", "FAST_RUN"),
    ("allow_gc=maybe", "True or False"),
    ("floatX", "name=value"),
])
def test_bad_flags_name_the_valid_values(flags, match):
    with pytest.raises(ValueError, match=match):
        Config().apply_flags(flags)


def test_flags_from_the_environment():
    env = dict(os.environ, COURSEKIT_FLAGS="floatX=float64,allow_gc=False,mode=FAST_COMPILE")
    out = subprocess.run([sys.executable, "-c", "import coursekit as c; print(c.config.floatX, c.config.allow_gc, "
                          "c.config.mode)"], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["float64", "False", "FAST_COMPILE"]


def test_bad_environment_flag_fails_at_import():
    env = dict(os.environ, COURSEKIT_FLAGS="floatx=float32")
    out = subprocess.run([sys.executable, "-c", "import coursekit"], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "unknown flag 'floatx'" in out.stderr


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="valid flags"):
        theano.config.floatx = "float64"


def test_import_does_not_import_cupy():
    out = subprocess.run([sys.executable, "-c", "import sys, coursekit, coursekit.tensor; "
                          "print('cupy' in sys.modules)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_mode_flag_is_used():
    x = T.fvector("x")
    with theano.config.change(mode="FAST_COMPILE"):
        f = theano.function([x], x * 1 + 0)
    assert len(f.toposort()) == 2  # nothing simplified
    g = theano.function([x], x * 1 + 0)
    assert len(g.toposort()) == 0
    np.testing.assert_array_equal(g(np.ones(2, "float32")), [1, 1])
