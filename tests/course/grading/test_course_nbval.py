"""nbval_sanitize.cfg, read the way nbval reads it, and the README's nbval command end to end.

The sanitizers must hide what differs between two honest runs (timings, addresses, GPU names,
dates) and nothing else; the end-to-end test checks that --nbval-lax, --nbval-sanitize-with,
-p no:cacheprovider and a conftest.py work together, and that nbval still catches a real change.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output
from nbval.plugin import get_sanitize_patterns

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "nbval_sanitize.cfg"


def sanitize(text: str) -> str:
    for regex, replace in get_sanitize_patterns(CONFIG.read_text()):
        text = re.sub(regex, replace, text)
    return text


def test_config_is_ascii_and_every_pattern_compiles():
    raw = CONFIG.read_bytes()
    assert raw.isascii(), "nbval reads the file with the locale's encoding; keep it ASCII"
    patterns = get_sanitize_patterns(raw.decode())
    assert len(patterns) >= 10
    for regex, _ in patterns:
        re.compile(regex)


@pytest.mark.parametrize("one, other", [
    ("f took 0.123 s", "f took 12.5 s"),
    ("took 1.5e-05 s per call", "took 3.2e-06 s per call"),
    ("copy: 512 \u00b5s, kernel: 20 ms", "copy: 17 us, kernel: 3 ms"),
    ("8.14 ms \u00b1 120 \u00b5s per loop (mean \u00b1 std. dev. of 7 runs, 100 loops each)",
     "512 \u00b5s \u00b1 3.1 \u00b5s per loop (mean \u00b1 std. dev. of 7 runs, 1,000 loops each)"),
    ("Wall time: 2.31 s", "Wall time: 870 ms"),
    ("<function f at 0x7f3a2c1b9d30>", "<function f at 0x7f00deadbeef>"),
    ("GPU: NVIDIA H100 80GB HBM3 (sm_90)", "GPU: simulated GPU (sm_80)"),
    ("device: Tesla T4, 15 GiB", "device: NVIDIA A100-SXM4-40GB, 15 GiB"),
    ("GPU speedup: 12.3x", "GPU speedup: 0.8x"),
    ("bandwidth 12.5 GB/s", "bandwidth 900 GB/s"),
    ("run on 2024-06-07T12:01:02.5+00:00", "run on 2025-01-31 08:00:00"),
    ("generated 06/07/2024 at 12:01:02", "generated 1/31/25 at 08:00:59"),
    ("Fri, 7 Jun 2024", "Mon, 31 Mar 2025"),
    ("CUDA 12.4, driver 550.54.15", "CUDA 13.0, driver 580.1"),
    ("wrote /tmp/tmpab12cd/out.npy", "wrote /tmp/pytest-of-x/t0/out.npy"),
])
def test_volatile_text_sanitizes_equal(one, other):
    assert sanitize(one) == sanitize(other), (sanitize(one), sanitize(other))


@pytest.mark.parametrize("text", [
    "(20, 10) float32",
    "array([1., 2., 3.])",
    "sum = 4.5 over 230400 elements",
    "GpuFromHost(x), HostFromGpu(y): 2 transfer ops",
    "Elemwise{exp} on cpu; GpuElemwise{exp} on gpu",
    "a 20x10 matrix of float64",
    "3 steps, 784 features, 400 examples",
])
def test_stable_text_is_left_alone(text):
    assert sanitize(text) == text


def _notebook(path: Path, source: str, stored: str) -> None:
    cell = new_code_cell("# NBVAL_CHECK_OUTPUT\n" + source, execution_count=1)
    cell.outputs = [new_output("stream", name="stdout", text=stored)]
    nb = new_notebook(cells=[new_code_cell("x = 1"), cell])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.slow
def test_nbval_lax_with_sanitizers_cacheprovider_off_and_a_conftest(tmp_path):
    # The same pytest settings as the repository's pyproject.toml.
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-ra"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("collect_ignore_glob = ['course_fixtures/*']\n")
    (tmp_path / "tests" / "test_plain.py").write_text("def test_ok():\n    assert True\n")
    (tmp_path / "tests" / "course_fixtures").mkdir()
    (tmp_path / "tests" / "course_fixtures" / "would_fail.ipynb").write_text(
        json.dumps(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])))
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "volatile.ipynb",
              "print(f'took {0.5:.3f} s at {hex(id(x))}')", "took 0.123 s at 0x7f3a2c1b9d30\n")
    (tmp_path / "solutions").mkdir()
    _notebook(tmp_path / "solutions" / "changed.ipynb", "print(x + 1)", "3\n")  # really prints 2

    command = [sys.executable, "-m", "pytest", "tests", "notebooks", "solutions", "--nbval-lax",
               "--nbval-current-env", "--nbval-sanitize-with", str(CONFIG), "-p", "no:cacheprovider",
               "-q", "-rA", "-W", "error::DeprecationWarning"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    report = result.stdout + result.stderr
    assert re.search(r"PASSED tests/test_plain\.py::test_ok", report), report
    assert re.search(r"PASSED notebooks/volatile\.ipynb::Cell 1", report), report
    assert re.search(r"FAILED solutions/changed\.ipynb::Cell 1", report), report
    assert "would_fail" not in report, report
    assert "1 failed" in report and not (tmp_path / ".pytest_cache").exists(), report
