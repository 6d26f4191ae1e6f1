"""The report's isolation section comes from the rows, i.e. from where each run executed (issue 39).

With ``--cluster`` the coordinator used to describe its own machine's protections, whatever the workers
had. Each row's protection label is made where its run executed, so the section is built from the
labels, and it warns when the runs were not all isolated alike. A Dask check of the same point is in
``tests/course/grading/test_grading_submission_cost.py`` (the byte-cap notebook goes through a cluster whose workers
run without bubblewrap).
"""

from __future__ import annotations

from coursekit.course.grading import rungroup, sandbox
from coursekit.course.grading.report import isolation_lines, summary_markdown
from coursekit.course.grading.scores import Score

WORKER = "no sandbox + cgroup v2 + rlimits"
LOCAL = "bubblewrap + cgroup v2 + cpu weight + rlimits + uid 65534"


def _rows(*labels):
    return [Score("s", "01_x", f"c{i}", 1, 1, "passed", label) for i, label in enumerate(labels)]


def test_the_section_says_what_the_rows_say_not_what_this_machine_has():
    local = sandbox.Protection(True, "v2", False, (), ("--size",), (65534, 65534), True)
    assert local.label == LOCAL
    lines = isolation_lines(_rows(WORKER, WORKER, ""), local)
    assert lines[0] == f"{WORKER} (2 rows):"
    assert any("NOT enforced: filesystem, PID and network isolation" in line for line in lines)
    assert not any("bubblewrap:" in line or "WARNING" in line for line in lines)


def test_runs_isolated_differently_are_warned_about_and_each_described():
    local = sandbox.Protection(True, "v2", False, (), ("--size",), (65534, 65534), True)
    lines = isolation_lines(_rows(LOCAL, WORKER, LOCAL), local)
    assert lines[0].startswith("WARNING: the runs were not all isolated alike") and "(1 rows)" in lines[0]
    assert f"{LOCAL} (2 rows):" in lines and f"{WORKER} (1 rows):" in lines
    assert any(line.strip() in local.describe() for line in lines)          # this machine's own words
    assert any("host uid 65534" in line for line in lines)
    markdown = summary_markdown(_rows(LOCAL, WORKER), protection=isolation_lines(_rows(LOCAL, WORKER)))
    assert "## How each run was isolated" in markdown and "  - " in markdown


def test_no_run_no_isolation_claimed():
    assert isolation_lines(_rows("", "")) == ["no notebook was run"]


def test_a_runs_cgroup_gets_a_cpu_weight_where_a_cpu_controller_exists():
    guard = sandbox.detect()
    if not guard.cgroup:
        assert not guard.cpu_weight
        return
    group = rungroup.RunGroup("coursekit-cpu-weight-test", sandbox.Limits(), guard.cgroup)
    try:
        assert group.cpu == guard.cpu_weight == sandbox.cpu_controller(guard.cgroup)
        if group.cpu:
            name = "cpu.weight" if guard.cgroup == "v2" else "cpu.shares"
            weights = [(d / name).read_text().strip() for d in group.dirs if (d / name).exists()]
            assert weights == [str(rungroup.CPU_WEIGHT if guard.cgroup == "v2" else rungroup.CPU_WEIGHT * 1024 // 100)]
            assert ("cpu weight" in guard.label) and any(str(d).endswith("coursekit-cpu-weight-test")
                                                         for d in group.dirs[-1:])
    finally:
        group.close()
    assert not any(d.exists() for d in group.dirs)
