"""Every "simulated? GPU? CPU?" decision asks a Device object, never the text of a label (issue 10).

Two kinds of test: behaviour (a device whose label says the opposite of what it is does not fool the
profiler or ``time_call``) and source (no code in ``coursekit/`` compares a label, or a device name
held as text, against words such as "simulated" or "GPU").
"""
import ast
import pathlib
import re

import numpy as np
import pytest

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T
from coursekit.lessons import time_call

ROOT = pathlib.Path(__file__).resolve().parents[2] / "coursekit"


def exp_function(name):
    x = theano.shared(np.ones(7, dtype="float32"), name="x")
    return theano.function([], T.exp(x), profile=True, name=name)


@pytest.fixture
def sim_with_a_misleading_label(monkeypatch):
    sim = devices.get("sim")
    monkeypatch.setattr(sim, "label", "Device X (a label that never says what it is)")
    return sim


def test_the_compiled_function_carries_its_device_object(device):
    with theano.config.change(device=device):
        f = exp_function("f")
    assert f.device is devices.get(device) and f.maker.fgraph.device is devices.get(device)
    assert str(f.device) == f.device.label and f.device.label in repr(f)


def test_a_simulated_device_is_called_simulated_whatever_its_label(sim_with_a_misleading_label):
    with theano.config.change(device="sim"):
        f = exp_function("labelled_x")
    f(), f()
    assert f.profile.simulated
    assert "SIMULATED GPU" in f.profile.summary(file="str")
    assert "Device X" in f.profile.summary(file="str")
    timing = time_call(f, repeat=1, number=1, model=False)
    assert timing.simulated and timing.device.startswith("Device X") and "simulated GPU: CPU time" in str(timing)


def test_a_label_that_says_simulated_does_not_make_a_device_simulated(monkeypatch):
    cpu = devices.get("cpu")
    monkeypatch.setattr(cpu, "label", "simulated GPU, or so this label claims")
    f = exp_function("cpu_f")
    f(), f()
    assert not f.profile.simulated and "SIMULATED" not in f.profile.summary(file="str")
    timing = time_call(f, repeat=1, number=1, model=False)
    assert not timing.simulated and "CPU time" not in str(timing)
    plain = time_call(np.exp, np.ones(3), device="simulated GPU (a plain callable's own words)", repeat=1, number=1)
    assert not plain.simulated, "a plain callable's label is shown, not believed"
    asked = time_call(np.exp, np.ones(3), device=devices.get("sim"), repeat=1, number=1)
    assert asked.simulated and asked.device == devices.get("sim").label


# ------------------------------------------------------------------ source
WORDS = re.compile(r"sim|emulat|gpu|cuda|cpu|host|device", re.IGNORECASE)
TEXTUAL = re.compile(r"label|devices?\b|backend\b|\.lower\(\)")
LABEL_TEXT = re.compile(r"label|backend\b|\.lower\(\)")


def _decisions_from_text(tree, source):
    """(line, code) of tests of a label-like expression against a device word: substring (``in``)
    tests on labels, device names or lowered text, equality with a label, ``.lower()``/``.startswith()``
    of a label."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn, ast.Eq, ast.NotEq))
                                                 for op in node.ops):
            sides = [node.left, *node.comparators]
            words = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)
                     and WORDS.search(s.value)]
            others = [ast.get_source_segment(source, s) or "" for s in sides if s not in words]
            substring = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
            # an op's declared ``device`` ("cpu"/"gpu") and config.device are exact names: equality is fine;
            # a substring test on them, or any test on a label, reads text
            pattern = TEXTUAL if substring else LABEL_TEXT
            if words and any(pattern.search(o) for o in others):
                found.append((node.lineno, ast.get_source_segment(source, node)))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("lower", "startswith", "endswith")
                and "label" in (ast.get_source_segment(source, node.func.value) or "")):
            found.append((node.lineno, ast.get_source_segment(source, node)))
    return found


def test_no_code_decides_simulated_or_gpu_from_a_label():
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for line, code in _decisions_from_text(ast.parse(source), source):
            offenders.append(f"{path.relative_to(ROOT.parent)}:{line}: {code}")
    assert not offenders, "ask the Device object (device.simulated, device.is_gpu), not its label:\n" + "\n".join(
        offenders)


def test_the_source_check_catches_the_old_way():
    old = 'def simulated(self):\n    return any("sim" in d.lower() for d in self.labels)\n'
    older = 'x = "simulated" in timing.label\n'
    assert _decisions_from_text(ast.parse(old), old) and _decisions_from_text(ast.parse(older), older)


def test_an_emulated_kernel_timing_asks_the_kernels_device():
    from coursekit import cuda

    module = cuda.SourceModule("__global__ void twice(float *x, int n) {"
                               " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }",
                               backend="emulator")
    kernel = module.get_function("twice")
    assert kernel.device is devices.get("sim")
    data = devices.get("sim").to_device(np.ones(5, "float32"))
    timing = time_call(lambda: kernel(data, np.int32(5), block=(32, 1, 1), grid=(1, 1)), device=kernel,
                       repeat=1, number=1)
    assert timing.simulated and timing.emulated and "emulator: CPU time" in str(timing)
