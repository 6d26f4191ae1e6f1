"""A submission cannot cost the grader more than its own run (issue 39, items 2 and 7).

Before: a notebook of 248,000 empty cells (22 MB) took the grader's own process to 950 MB and 263 s
(``benchmarks/grading_submission_cost.py`` on the commit before this change); at the 64 MB cap it is
several GB. Now the grader scans the raw bytes in 1 MB pieces and refuses a notebook over the cell
cap with a reason; everything else (parse, restore, scrutiny) happens once, in the run's child, inside
its cgroup. The byte-cap notebook is checked in a fresh process (its peak memory is the grader's
alone), locally and through a local Dask cluster whose workers run without bubblewrap (the report's
isolation must then come from them). Also: a run without a sandbox keeps its caches in its own
folder, and the grader warns loudly about such runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading import grader, prepare
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.authoring.graded import graded_cells
from coursekit.course.grading.report import isolation_lines
from coursekit.course.grading.runner import protection, run_notebook
from coursekit.course.grading.scores import Score
from test_course_grader import NAME, solution

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "grading_submission_cost.py"
GUARD = protection()


def _benchmark(tmp_path, *options) -> dict:
    out = subprocess.run([sys.executable, str(BENCHMARK), "--out", str(tmp_path / "class"), *options],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_raw_scan_counts_cells_across_pieces_and_not_inside_strings(tmp_path, monkeypatch):
    nb = new_notebook(cells=[new_code_cell(f"x{i} = '\"cell_type\"'") for i in range(30)])
    nb.cells[0].source = "y = 1\n" * 400_000                     # 2.4 MB: keys fall across 1 MB pieces
    nbformat.write(nb, tmp_path / "n.ipynb")
    prepare.scan(tmp_path / "n.ipynb", cell_limit=30)          # 30 cells; the quoted ones are escaped
    with pytest.raises(prepare.UnreadableSubmission, match="more than 29 cells.*COURSEKIT_GRADE_CELLS"):
        prepare.scan(tmp_path / "n.ipynb", cell_limit=29)
    with pytest.raises(prepare.UnreadableSubmission, match="over the grader's 1 MB"):
        prepare.scan(tmp_path / "n.ipynb", limit_mb=1)
    monkeypatch.setattr(prepare, "SOURCE_LIMIT_MB", 2)
    with pytest.raises(prepare.UnreadableSubmission, match="more than 2 MB together"):
        prepare.parse((tmp_path / "n.ipynb").read_bytes())


def test_a_byte_cap_notebook_of_empty_cells_costs_the_grader_little(tmp_path):
    result = _benchmark(tmp_path, "--mb", str(prepare.SUBMISSION_LIMIT_MB))
    assert result["cells"] > 500_000
    assert result["grader_peak_rss_mb"] < 200 and result["wall_s"] < 30, result
    assert all(points == 0 and "more than 5000 cells" in reason for points, reason, _ in result["rows"].values())


@pytest.mark.skipif(not GUARD.bubblewrap, reason="the workers' isolation must differ from this machine's")
def test_through_dask_the_notebook_costs_its_own_task_and_the_report_shows_the_workers_isolation(tmp_path):
    pytest.importorskip("distributed")
    result = _benchmark(tmp_path, "--mb", str(prepare.SUBMISSION_LIMIT_MB), "--cluster", "1", "--honest",
                        "--worker-env", "COURSEKIT_SANDBOX=none")
    assert result["grader_peak_rss_mb"] < 200 and result["worker_peak_rss_mb"] < 200, result
    rows = [Score(key.split("/")[0], NAME, key.split("/")[1], points, points, reason, label)
            for key, (points, reason, label) in result["rows"].items()]
    assert [r.points for r in rows if r.student == "ann"] == [2, 3, 1], result       # the honest neighbour
    assert all("more than 5000 cells" in r.reason for r in rows if r.student == "eve")
    lines = isolation_lines(rows)             # what __main__ writes for --cluster: the rows' own labels
    assert lines[0].startswith("no sandbox + ") and any("NOT enforced: filesystem" in line for line in lines), lines
    assert not any(line.startswith("bubblewrap") for line in lines)


def test_the_submission_is_parsed_in_the_runs_child_never_in_the_grader(tmp_path, monkeypatch):
    nb = solution()
    nb.cells[2:2] = [new_code_cell("") for _ in range(200)]
    nbformat.write(nb, tmp_path / "sub.ipynb")
    exercise = make_exercise(solution(), "fixture")
    reference = grader.Reference(NAME, exercise, graded_cells(exercise))

    def refuse(*_, **__):
        raise AssertionError("the grader's process parsed a submission")

    monkeypatch.setattr(nbformat, "reads", refuse)
    monkeypatch.setattr(nbformat, "read", refuse)
    rows = grader.grade_notebook(tmp_path / "sub.ipynb", reference, student="ann", cell_timeout=60,
                                 notebook_timeout=180)
    assert [(r.points, r.reason) for r in rows] == [(2, "passed"), (3, "passed"), (1, "passed")], rows


def test_a_run_without_a_sandbox_keeps_its_caches_in_its_own_folder(tmp_path, monkeypatch):
    from coursekit.course.grading import sandbox

    monkeypatch.setenv("COURSEKIT_SANDBOX", "none")
    sandbox.detect.cache_clear()
    plant = ("import os, sys\nhome = os.environ['HOME']\n"
             "for key in ('COURSEKIT_CACHE_DIR', 'MPLCONFIGDIR', 'IPYTHONDIR', 'PYTHONPYCACHEPREFIX', 'TMPDIR'):\n"
             "    assert os.environ[key].startswith(home), key\n"
             "assert sys.pycache_prefix and sys.pycache_prefix.startswith(home)\n"
             "open(os.path.join(home, 'planted'), 'w').write('x')\nprint('HOME=' + home)")
    check = "import os\nassert not os.path.exists({planted!r})"
    nbformat.write(new_notebook(cells=[new_code_cell(plant)]), tmp_path / "a.ipynb")
    try:
        first = run_notebook(tmp_path / "a.ipynb", cell_timeout=60, notebook_timeout=120,
                             env={"COURSEKIT_CUDA_SHARED_CACHE": str(tmp_path)}, executed_path=tmp_path / "ran.ipynb")
        assert first.outcome(0).passed, (first.outcome(0), first.stderr[-800:])
        home = nbformat.read(tmp_path / "ran.ipynb", 4).cells[0].outputs[0]["text"].split("HOME=")[1].strip()
        nbformat.write(new_notebook(cells=[new_code_cell(check.format(planted=os.path.join(home, "planted"))),
                                           new_code_cell("import os\nassert 'COURSEKIT_CUDA_SHARED_CACHE' not in "
                                                         "os.environ or os.getuid() != os.stat(os.environ["
                                                         "'COURSEKIT_CUDA_SHARED_CACHE']).st_uid")]),
                       tmp_path / "b.ipynb")
        second = run_notebook(tmp_path / "b.ipynb", cell_timeout=60, notebook_timeout=120,
                              env={"COURSEKIT_CUDA_SHARED_CACHE": str(tmp_path)})
    finally:
        sandbox.detect.cache_clear()
    assert second.outcome(0).passed and second.outcome(1).passed, (second.outcome(0), second.outcome(1))


def test_a_class_graded_without_a_sandbox_is_warned_about_once_loudly(capsys, monkeypatch):
    monkeypatch.setattr(grader, "_WARNED", set())
    rows = [Score("a", NAME, "c", 1, 1, "passed", "no sandbox + no cgroup + rlimits"),
            Score("b", NAME, "c", 1, 1, "passed", "bubblewrap + no cgroup + rlimits")]
    first, second = grader.sandbox_warning(rows), grader.sandbox_warning(rows)
    assert first == second and first[0].startswith("SECURITY: 1 runs had no sandbox") and "apt-get install bubblewrap" \
        in first[0]
    assert capsys.readouterr().err.count("SECURITY:") == 1
    assert grader.sandbox_warning(rows[1:]) == []


def test_the_grader_loads_no_emulator_module_until_a_kernel_cache_is_built():
    code = ("import sys, coursekit.course.grading.grader, coursekit.course.grading.runner\n"
            "print(sorted(m for m in sys.modules if m.startswith('coursekit.cuda')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
