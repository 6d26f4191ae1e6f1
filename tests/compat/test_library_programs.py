"""Lasagne's MNIST MLP and CNN examples and Keras 1.x's MNIST MLP and IMDB LSTM train through the alias.

The libraries are fetched at run time (``tests/compat/libraries.py``); where they cannot be (no network),
each test is skipped with the reason.  Every program runs in its own interpreter under
``python -m coursekit.theano``, on ``device=cpu`` (Theano's float64 default) and on the simulated GPU
(``device=sim,floatX=float32``, the flags Theano's GPU users ran with), and must lower its training loss.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from . import libraries

PROGRAMS = pathlib.Path(__file__).parent / "programs"
FLAGS = {"cpu": "device=cpu", "sim": "device=sim,floatX=float32"}


def _library(getter):
    try:
        return getter()
    except libraries.Unavailable as exc:
        pytest.skip(f"library not available here: {exc}")


@pytest.fixture(scope="module")
def lasagne_src():
    return _library(libraries.lasagne_source)


@pytest.fixture(scope="module")
def keras_dir():
    return _library(libraries.keras_path)


def train(program, args, path, device):
    env = dict(os.environ, PYTHONPATH=f"{path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               THEANO_FLAGS=FLAGS[device])
    proc = subprocess.run([sys.executable, "-m", "coursekit.theano", str(PROGRAMS / program), *args],
                          capture_output=True, text=True, env=env, timeout=900, cwd=PROGRAMS)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_lasagne_mnist_example_trains(lasagne_src, model, device):
    losses = train("lasagne_mnist.py", [str(lasagne_src / "examples"), model, "3"], lasagne_src, device)
    assert losses[-1] < losses[0] * 0.97, losses


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_keras_mnist_mlp_example_trains(keras_dir, device):
    losses = train("keras_examples.py", ["mnist_mlp", "3"], keras_dir, device)
    assert losses[-1] < losses[0] * 0.8, losses


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_keras_imdb_lstm_example_trains(keras_dir, device):
    losses = train("keras_examples.py", ["imdb_lstm", "6"], keras_dir, device)
    assert losses[-1] < losses[0] - 0.003, losses
