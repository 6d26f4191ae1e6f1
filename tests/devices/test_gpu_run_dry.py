"""The prepared GPU run (benchmarks/gpu_run.sh), dry-run on the CuPy stand-in: every step runs, small.

The next lent GPU gets one device call (issue 36); this is what makes that call likely to succeed: the
same script, the same steps and the same files under $OUT, with the stand-in as ``cupy`` in every process
(notebook kernels too).  Nothing it measures is a GPU figure, and its outputs say so.  About 2 minutes on
a shared 2-core machine.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANY_LAUNCH_ROWS = ("lesson 5 step as written", "lesson 5 step tuned", "lesson 8 RNN scan, 100 steps",
                    "lesson 10 MLP step", "lesson 10 conv-net step")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-run-out")
    env = dict(os.environ, OUT=str(out), TMPDIR=str(tmp_path_factory.mktemp("work")))
    env.pop("COURSEKIT_FLAGS", None)
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_run.sh"), "--dry-run"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    return done, out


def members(tar_path):
    with tarfile.open(tar_path) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}


def test_every_step_ran_and_said_how_it_ended(dry_run):
    done, out = dry_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = (out / "summary.txt").read_text()
    for step in ("model-accuracy", "held-out", "gpu-kernels", "run-py", "notebooks"):
        assert f"{step}: exit 0," in summary, summary
    assert "calibrate: skipped (dry run)" in summary
    assert sorted(p.name for p in out.iterdir()) == ["card.txt", "gpu-runs.tar.gz", "log.txt", "results.tar.gz",
                                                      "summary.txt"]        # within the device tool's 8 files
    assert "stand-in" in (out / "card.txt").read_text() and "DRY RUN" in (out / "log.txt").read_text()


def test_the_corpus_gets_the_lessons_many_launch_calls_labelled_as_stand_in_figures(dry_run):
    _, out = dry_run
    files = members(out / "results.tar.gz")
    [accuracy] = [v for k, v in files.items() if "model-accuracy" in k and k.endswith("-standin.json")]
    run = json.loads(accuracy)
    names = [row["row"] for row in run["rows"]]
    assert run["standin"] is True and all(any(n.startswith(m) for n in names) for m in MANY_LAUNCH_ROWS), names
    many = [row for row in run["rows"] if row["row"].startswith("lesson ")]
    assert all(row["launches"] > 1 for row in many), many        # what the wider band is for
    [kernels] = [json.loads(v) for k, v in files.items() if "gpu-kernels" in k]
    rows = {row["row"] for row in kernels["kernels"]}
    assert {r for r in rows if "transpose" in r} and len({r for r in rows if "gather" in r}) == 6, rows
    assert kernels["standin"] is True and kernels["launch"]["ratio"] > 0
    assert any("stand-in" in k for k in files), files.keys()     # run.py names its file after the device


def test_executed_notebooks_carry_the_card(dry_run):
    _, out = dry_run
    notebooks = {k: v for k, v in members(out / "gpu-runs.tar.gz").items() if k.endswith(".ipynb")}
    assert set(notebooks) == {"gpu-runs/01_tour.ipynb", "gpu-runs/01_tour_solutions.ipynb"}
    for text in notebooks.values():
        run = json.loads(text)["metadata"]["coursekit_gpu_run"]
        assert run["status"] == "ok" and "stand-in" in run["card"] and run["flags"] == "device=gpu", run
