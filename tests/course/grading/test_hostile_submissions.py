"""Hostile submissions folders and names against the grade command (issue 22's table).

* a student folder that is a symbolic link (to another student, or to ``solutions/``), a link deeper
  in the path, a notebook that is a link: each refused with a reason, never credited;
* a file or folder whose name is not UTF-8: reported by its escaped form, the class still graded;
* names that reach the reports: no live formula in ``grades.csv``, no heading, link or tag in
  ``grades.md``, no escape code on the instructor's terminal;
* one submission that makes the grader itself fail costs that student's notebook, never the report.

Only two notebooks really run (an honest student, and the same work under a hostile name); the
rest is refused before anything runs.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import nbformat
import pytest

from coursekit.__main__ import main
from coursekit.course.grading import grader, submissions
from coursekit.course.grading.escape import csv_cell, markdown_text, printable_name, terminal_text
from coursekit.course.authoring.exercises import make_exercise
from test_course_grader import NAME, solution

FULL = 6
FORMULA_NAME = "=HYPERLINK(\"http://x\",\"y\")"
HEADING_NAME = "# ev<b>il</b> [x](http://y) \x1b[31mred"


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("links")
    reference = root / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), reference / f"{NAME}.ipynb")
    outside = root / "solutions"           # what a link could reach: the reference solutions
    outside.mkdir()
    nbformat.write(solution(), outside / f"{NAME}.ipynb")
    submissions = root / "submissions"
    (submissions / "honest").mkdir(parents=True)
    nbformat.write(solution(), submissions / "honest" / f"{NAME}.ipynb")
    (submissions / "link_to_classmate").symlink_to(submissions / "honest")
    (submissions / "link_to_solutions").symlink_to(outside)
    (submissions / "deep_link").mkdir()
    (submissions / "deep_link" / "work").symlink_to(outside)
    (submissions / f"flat_link{grader.FLAT_SEPARATOR}{NAME}.ipynb").symlink_to(outside / f"{NAME}.ipynb")
    (submissions / "file_link").mkdir()
    (submissions / "file_link" / f"{NAME}.ipynb").symlink_to(outside / f"{NAME}.ipynb")
    hostile = submissions / HEADING_NAME.replace("/", "")
    hostile.mkdir()
    nbformat.write(solution(), hostile / f"{NAME}.ipynb")
    (submissions / FORMULA_NAME.replace("/", "")).mkdir()
    undecodable = os.fsencode(str(submissions)) + b"/bad\xff\xfename"
    os.mkdir(undecodable)
    with open(undecodable + b"/" + NAME.encode() + b"\xff.ipynb", "wb") as handle:
        handle.write(b"not a notebook")
    out = root / "out"
    code = main(["grade", str(submissions), "--reference", str(reference), "--out", str(out / "grades.csv"),
                 "--cell-timeout", "60", "--notebook-timeout", "240", "--no-progress"])
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return code, rows, (out / "grades.md").read_text(encoding="utf-8")


def totals(rows) -> dict[str, int]:
    found: dict[str, int] = {}
    for row in rows:
        found[row["student"]] = found.get(row["student"], 0) + int(row["points"])
    return found


@pytest.mark.parametrize("student", ["link_to_classmate", "link_to_solutions", "deep_link", "flat_link", "file_link"])
def test_a_link_anywhere_in_a_submission_is_refused_with_a_reason(graded_class, student):
    code, rows, markdown = graded_class
    assert code == 0
    mine = [row for row in rows if row["student"] == student]
    assert mine and all(row["points"] == "0" for row in mine), mine
    assert all("symbolic link" in row["reason"] or "missing notebook" == row["reason"] for row in mine), mine
    if student != "deep_link":     # a linked folder inside the student's is skipped and named in a warning
        assert all("symbolic link" in row["reason"] for row in mine), mine
    assert totals(rows)["honest"] == FULL


def test_an_undecodable_name_is_reported_escaped_and_the_class_is_graded(graded_class):
    code, rows, markdown = graded_class
    assert code == 0
    assert "bad\\xff\\xfename" in totals(rows), sorted(totals(rows))
    assert totals(rows)["honest"] == FULL
    assert "# Grades" in markdown and "honest" in markdown


def test_names_that_reach_the_reports_are_inert(graded_class):
    code, rows, markdown = graded_class
    students = totals(rows)
    formula = [s for s in students if "HYPERLINK" in s]
    assert formula and all(s.startswith("'=") for s in formula), formula
    assert not any(row[column].startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for column in row)
    hostile = [s for s in students if "ev" in s and "il" in s]
    assert hostile and students[hostile[0]] == FULL, students      # a hostile name, honest work: full marks
    assert "\x1b" not in "".join(students) and "\x1b" not in markdown
    lines = markdown.splitlines()
    assert sum(line.startswith("# ") for line in lines) == 1, [line for line in lines if line.startswith("#")]
    assert not re.search(r"<[a-z/]", markdown), re.findall(r".{20}<[a-z/].{20}", markdown)
    assert not re.search(r"(?<!\\)\]\(", markdown)        # no link: every bracket is escaped


def test_the_escaping_helpers():
    assert [csv_cell(t) for t in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "ok")] == \
        ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'x", "ok"]
    assert markdown_text("# a\n- b <i>&") == "\\# a - b &lt;i&gt;&amp;"
    assert markdown_text("- x") == "\\- x" and markdown_text("1. x") == "\\1. x"
    assert terminal_text("\x1b[2J\x1b]0;title\x07ok\x00\x9b1m") == "ok"
    assert printable_name(b"a\xffb") == "a\\xffb" and printable_name("tab\tname") == "tab\\tname"


def test_one_failing_submission_never_empties_the_report(tmp_path, monkeypatch):
    reference = tmp_path / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), reference / f"{NAME}.ipynb")
    for student in ("a", "b"):
        (tmp_path / "subs" / student).mkdir(parents=True)
        nbformat.write(make_exercise(solution()), tmp_path / "subs" / student / f"{NAME}.ipynb")
    real = grader.grade_one

    def failing(student, *args, **kwargs):
        if student == "a":
            raise MemoryError("the grader itself ran out")
        return [grader.Score(student, NAME, "softplus", 0, 2, "stub")]

    monkeypatch.setattr(grader, "grade_one", failing)
    scores, _ = grader.grade(tmp_path / "subs", reference, progress=False)
    monkeypatch.setattr(grader, "grade_one", real)
    by_student = {s.student: s for s in scores}
    assert by_student["a"].points == 0 and by_student["a"].reason.startswith("grader error")
    assert "MemoryError" in by_student["a"].reason, by_student["a"].reason
    assert by_student["b"].reason == "stub"


def test_a_link_inside_the_submissions_folder_is_never_opened(tmp_path):
    target = tmp_path / "secret.ipynb"
    target.write_text("{}")
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "x.ipynb").symlink_to(target)
    fifo = tmp_path / "subs" / "fifo.ipynb"
    os.mkfifo(fifo)
    with pytest.raises(grader.UnreadableSubmission, match="symbolic link"):
        grader.read_submission(tmp_path / "subs" / "x.ipynb")
    with pytest.raises(grader.UnreadableSubmission, match="not a regular file"):
        grader.read_submission(fifo)
    # nor hashed for the regrade fingerprint (a FIFO would block the grader, a link be followed)
    assert submissions.file_sha256(fifo) == submissions.file_sha256(tmp_path / "subs" / "x.ipynb") == ""
    assert len(submissions.file_sha256(target)) == 64
    assert Path(target).read_text() == "{}"
