"""The LMS round trip (issue 33 item 6) and regrades that retry the grader's own failures (issue 39 item 3).

A Canvas download (flat ``sortablename[_late]_userid_fileid_file.ipynb`` files) and a Moodle download
(``Full Name_participantid_assignsubmission_file_`` folders), each of 3 students, are graded with the
LMS's own gradebook file as the roster and exported back into it. The fast tests replace the
notebook run by a recorder (as tests/course/grading/test_course_class.py does); the slow test grades a Canvas class
for real. Regrades: a grader-side failure is run again even though nothing changed, a bare
``--regrade`` reuses the last run's scope, and two regrades leave two change reports.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest

from coursekit.__main__ import main
from coursekit.course.grading import grader, lms
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading.grader import Score
from coursekit.course.grading.submissions import Refused

FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"
POINTS = 6                                   # the fixture's graded cells: 2 + 3 + 1
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Exercise 5: fixture (777)",
                 "Quiz 1 (778)", "Current Points", "Final Points"]
CANVAS_ROSTER = [CANVAS_HEADER,
                 ["    Points Possible", "", "", "", "", "6", "10", "(read only)", "(read only)"],
                 ["Doe, Jane", "1001", "S-1", "jdoe", "A", "", "9", "9", "9"],
                 ["Smith, Bob", "1002", "S-2", "bsmith", "A", "", "8", "8", "8"],
                 ["Lee, Carol", "1003", "S-3", "clee", "B", "", "7", "7", "7"],
                 ["Ng, Dan", "1004", "S-4", "dng", "B", "", "", "", ""]]
MOODLE_HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                 "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]
MOODLE_ROSTER = [MOODLE_HEADER] + [
    [f"Participant {uid}", name, f"{uid}@example.org", "Submitted for grading", "", "6.00", "Yes", "", "-", ""]
    for uid, name in (("2001", "Jane Doe"), ("2002", "Bob Smith"), ("2003", "Carol Lee"), ("2004", "Dan Ng"))]


def solution():
    return nbformat.read(FIXTURE, as_version=4)


def references(root: Path, names=("01_fixture", "05_fixture")) -> Path:
    folder = root / "reference"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        nbformat.write(make_exercise(solution(), "fixture"), folder / f"{name}.ipynb")
    return folder


def write_csv(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def read_csv(path: Path) -> list:
    return list(csv.reader(open(path, newline="", encoding="utf-8")))


def canvas_download(root: Path, broken=None) -> Path:
    """Three students as Canvas names their files: one exact, one late re-upload (-1), one own name."""
    download = root / "canvas"
    download.mkdir()
    files = {"doejane_1001_5001_05_fixture.ipynb": solution(),
             "smithbob_LATE_1002_5002_05_fixture-1.ipynb": broken or solution(),
             "leecarol_1003_5003_my homework.ipynb": make_exercise(solution())}
    for name, nb in files.items():
        nbformat.write(nb, download / name)
    return download


def moodle_download(root: Path) -> Path:
    download = root / "moodle"
    for folder, name in (("Jane Doe_2001_assignsubmission_file_", "05_fixture.ipynb"),
                         ("Bob Smith_2002_assignsubmission_file_", "homework.ipynb"),
                         ("Carol Lee_2003_assignsubmission_file_", "05_fixture-Copy1.ipynb")):
        (download / folder).mkdir(parents=True)
        nbformat.write(solution(), download / folder / name)
    (download / "Jane Doe_2001_assignsubmission_onlinetext_").mkdir()
    (download / "Jane Doe_2001_assignsubmission_onlinetext_" / "onlinetext.html").write_text("<p>hi</p>")
    return download


@pytest.fixture
def recorded_runs(monkeypatch):
    """grade_one replaced by a recorder: every graded cell of a handed-in notebook passes; a refused one
    scores 0 with its reason, as grade_notebook does."""
    runs = []

    def fake_grade_one(student, reference, path, **_):
        runs.append((student, reference.name, path.name if path is not None else None))
        reason = "missing notebook" if path is None else path.reason if isinstance(path, Refused) else "passed"
        return [Score(student, reference.name, c.id, c.points if reason == "passed" else 0, c.points, reason)
                for c in reference.cells]

    monkeypatch.setattr(grader, "grade_one", fake_grade_one)
    return runs


# --- the names --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, uid, late, own", [
    ("doejane_1001_5001_05_fixture.ipynb", "1001", False, "05_fixture.ipynb"),
    ("smithbob_LATE_1002_5002_05_fixture-1.ipynb", "1002", True, "05_fixture-1.ipynb"),
    ("smithbob_late_1002_5002_hw_3_4.ipynb", "1002", True, "hw_3_4.ipynb"),
    ("LATE_anon_ab1C2_5002_x.ipynb", "anon_ab1C2", True, "x.ipynb"),
    ("o_brien_1005_5005_a.ipynb", "1005", False, "a.ipynb")])
def test_canvas_names_give_the_user_id_lateness_and_the_students_file(name, uid, late, own):
    parsed = lms.parse_canvas(name)
    assert (parsed["uid"], parsed["late"], parsed["file"]) == (uid, late, own)


def test_canvas_suffixes_are_dropped_and_other_names_are_not_canvas():
    assert lms.canvas_stem("05_fixture-3.ipynb") == "05_fixture"
    assert lms.canvas_stem("05_fixture-0b7a1c2e-1111-2222-3333-444455556666.ipynb") == "05_fixture"
    assert lms.canvas_stem("lab-week.ipynb") == "lab-week"
    assert lms.parse_canvas("alice__05_fixture.ipynb") is None and lms.parse_canvas("notes.ipynb") is None
    assert lms.parse_moodle("Jane Doe_2001_assignsubmission_file_") == {
        "uid": "2001", "name": "Jane Doe", "plugin": "assignsubmission_file", "file": ""}


# --- Canvas -----------------------------------------------------------------------------------------


def test_a_canvas_download_is_graded_and_exported_into_the_gradebooks_own_columns(tmp_path, recorded_runs, capsys):
    reference, download = references(tmp_path), canvas_download(tmp_path)
    roster = write_csv(tmp_path / "gradebook.csv", CANVAS_ROSTER + [["Who, Else", "1009", "", "", "", "", "", "", ""]])
    nbformat.write(solution(), download / "stray_1010_5010_05_fixture.ipynb")      # not in the roster
    out = tmp_path / "out" / "grades.csv"
    assert main(["grade", str(download), "--from", "canvas", "--roster", str(roster), "--assignment", "05",
                 "--reference", str(reference), "--out", str(out), "--export", "canvas", "--no-progress"]) == 0
    assert sorted(recorded_runs) == [("1001", "05_fixture", "doejane_1001_5001_05_fixture.ipynb"),
                                     ("1002", "05_fixture", "smithbob_LATE_1002_5002_05_fixture-1.ipynb"),
                                     ("1003", "05_fixture", "leecarol_1003_5003_my homework.ipynb"),
                                     ("1010", "05_fixture", "stray_1010_5010_05_fixture.ipynb")]
    exported = read_csv(out.with_name("grades-canvas.csv"))
    assert exported[0] == CANVAS_HEADER[:5] + ["Exercise 5: fixture (777)"]    # the gradebook's assignment
    assert exported[1] == ["    Points Possible", "", "", "", "", "6"]
    assert exported[2:] == [["Doe, Jane", "1001", "S-1", "jdoe", "A", "6"], ["Smith, Bob", "1002", "S-2", "bsmith", "A", "6"],
                            ["Lee, Carol", "1003", "S-3", "clee", "B", "6"], ["Ng, Dan", "1004", "S-4", "dng", "B", ""],
                            ["Who, Else", "1009", "", "", "", ""]]
    err = capsys.readouterr().err
    assert "1003: graded leecarol_1003_5003_my homework.ipynb as 05_fixture (the only exercise assigned)" in err
    assert "user 1010 (canvas download) is not in the roster" in err
    assert "2 students of the roster handed in nothing; their export cells are left blank (--missing zero writes 0): " \
           "Ng, Dan (1004), Who, Else (1009)" in err
    summary = out.with_suffix(".md").read_text()
    assert "left blank" in summary and "| 1001 · Doe, Jane | 6 | 6 |" in summary


def test_canvas_columns_that_cannot_be_matched_stop_before_grading(tmp_path, recorded_runs, capsys):
    reference, download = references(tmp_path), canvas_download(tmp_path)
    rows = [row[:5] + row[6:] for row in CANVAS_ROSTER]                        # no column for exercise 5
    roster = write_csv(tmp_path / "gradebook.csv", rows)
    args = ["grade", str(download), "--from", "canvas", "--roster", str(roster), "--assignment", "05",
            "--reference", str(reference), "--out", str(tmp_path / "g.csv"), "--export", "canvas", "--no-progress"]
    assert main(args) == 2 and recorded_runs == []
    err = capsys.readouterr().err
    assert "05_fixture: no column of" in err and "The gradebook's assignments: Quiz 1 (778)" in err
    assert "--lms-column NN=" in err
    assert main(args + ["--lms-column", "05=Quiz 1 (778)"]) == 0
    assert read_csv(tmp_path / "g-canvas.csv")[0][-1] == "Quiz 1 (778)"


def test_a_canvas_roster_without_its_columns_is_refused_with_the_line(tmp_path, capsys):
    bad = write_csv(tmp_path / "r.csv", [["Name", "ID"], ["x", "1"]])
    assert main(["grade", str(tmp_path), "--from", "canvas", "--roster", str(bad)]) == 2
    assert f"--roster {bad}, line 1: no 'Student', 'SIS User ID', 'SIS Login ID', 'Section' column" \
           in capsys.readouterr().err
    bad = write_csv(tmp_path / "r.csv", CANVAS_ROSTER[:2] + [["Doe, Jane", "x1", "", "", "", "", "", "", ""]])
    assert main(["grade", str(tmp_path), "--from", "canvas", "--roster", str(bad)]) == 2
    assert "line 3: ID 'x1' is not a Canvas user id" in capsys.readouterr().err


def test_canvas_links_ambiguity_and_foreign_names_are_refused_or_listed(tmp_path, recorded_runs, capsys):
    reference, download = references(tmp_path), canvas_download(tmp_path)
    nbformat.write(solution(), download / "leecarol_1003_5004_other try.ipynb")  # a second unnamed notebook
    (tmp_path / "elsewhere.ipynb").write_text(nbformat.writes(solution()))
    os.symlink(tmp_path / "elsewhere.ipynb", download / "evilmal_1006_5006_05_fixture.ipynb")
    (download / "readme.txt").write_text("hello")
    out = tmp_path / "grades.csv"
    assert main(["grade", str(download), "--from", "canvas", "--assignment", "05", "--reference", str(reference),
                 "--out", str(out), "--no-progress"]) == 0
    rows = {r["student"]: r for r in csv.DictReader(open(out, newline=""))}
    assert rows["1003"]["reason"].startswith("refused: 2 notebooks (leecarol_1003_5003_my homework.ipynb, "
                                             "leecarol_1003_5004_other try.ipynb) could each be 05_fixture")
    assert "symbolic link" in rows["1006"]["reason"] and rows["1006"]["points"] == "0"
    assert [path for who, _, path in recorded_runs if who == "1003"] == [      # neither notebook run alone
        "leecarol_1003_5003_my homework.ipynb, leecarol_1003_5004_other try.ipynb"]
    err = capsys.readouterr().err
    assert "ignored readme.txt: not a canvas download name (expected Canvas's <sortablename>[_late]_<userid>" in err


def test_a_folder_that_is_not_the_download_says_what_it_holds_and_what_was_expected(tmp_path, capsys):
    reference = references(tmp_path)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    assert main(["grade", str(tmp_path / "subs"), "--from", "moodle", "--reference", str(reference)]) == 2
    assert ("--from moodle: " + str(tmp_path / "subs") + " holds no moodle submission (it holds alice); expected "
            "Moodle's '<Full Name>_<participantid>_assignsubmission_file_' folders") in capsys.readouterr().err


def test_a_download_graded_without_from_gets_the_hint(tmp_path, recorded_runs, capsys):
    reference = references(tmp_path)
    args = ["--reference", str(reference), "--out", str(tmp_path / "g.csv"), "--no-progress"]
    assert main(["grade", str(canvas_download(tmp_path))] + args) == 2            # flat files: nothing to grade
    assert "3 of the 3 entries are named like a canvas download" in capsys.readouterr().err
    assert main(["grade", str(moodle_download(tmp_path))] + args) == 0            # folders: graded by folder name
    assert "4 of the 4 entries are named like a moodle download (Bob Smith_2002_assignsubmission_file_): grade it " \
           "with --from moodle" in capsys.readouterr().err


# --- Moodle -----------------------------------------------------------------------------------------


def test_a_moodle_download_is_graded_and_exported_into_its_grading_worksheet(tmp_path, recorded_runs, capsys):
    reference, download = references(tmp_path), moodle_download(tmp_path)
    hostile = [row[:] for row in MOODLE_ROSTER]
    hostile[4][1] = "=HYPERLINK(\"http://x\")"                     # the roster is text others typed
    roster = write_csv(tmp_path / "worksheet.csv", hostile)
    out = tmp_path / "grades.csv"
    assert main(["grade", str(download), "--from", "moodle", "--roster", str(roster), "--assignment", "05",
                 "--reference", str(reference), "--out", str(out), "--export", "moodle", "--missing", "zero",
                 "--no-progress"]) == 0
    assert sorted(r[:2] for r in recorded_runs) == [("2001", "05_fixture"), ("2002", "05_fixture"),
                                                    ("2003", "05_fixture")]
    assert {r["student"] for r in csv.DictReader(open(out, newline=""))} == {"2001", "2002", "2003"}
    sheet = read_csv(tmp_path / "grades-moodle.csv")
    assert sheet[0] == MOODLE_HEADER
    assert [(r[0], r[1], r[4], r[5]) for r in sheet[1:]] == [
        ("Participant 2001", "Jane Doe", "6", "6.00"), ("Participant 2002", "Bob Smith", "6", "6.00"),
        ("Participant 2003", "Carol Lee", "6", "6.00"), ("Participant 2004", "'=HYPERLINK(\"http://x\")", "0", "6.00")]
    err = capsys.readouterr().err
    assert "2001: ignored Jane Doe_2001_assignsubmission_onlinetext_: not a file submission" in err
    assert "1 students of the roster handed in nothing; their export cells are 0 (--missing zero): =HYPERLINK" in err


def test_a_moodle_download_without_a_worksheet_exports_participant_ids_not_folder_names(tmp_path, recorded_runs):
    reference, download = references(tmp_path), moodle_download(tmp_path)
    out = tmp_path / "grades.csv"
    assert main(["grade", str(download), "--from", "moodle", "--assignment", "05", "--reference", str(reference),
                 "--out", str(out), "--export", "moodle", "--no-progress"]) == 0
    sheet = read_csv(tmp_path / "grades-moodle.csv")
    assert sheet[0] == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
    assert sheet[1] == ["Participant 2001", "Jane Doe", "6", "6", ""]


# --- regrades ---------------------------------------------------------------------------------------


def test_a_regrade_reruns_what_the_grader_failed_and_counts_it(tmp_path, monkeypatch, capsys):
    reference = references(tmp_path, ["01_fixture"])
    for student in ("alice", "bob"):
        (tmp_path / "subs" / student).mkdir(parents=True)
        nbformat.write(solution(), tmp_path / "subs" / student / "01_fixture.ipynb")
    runs, attempts = [], []
    disk = ("not run: the grader's temporary folder /tmp has 12 MB free, below the 1024 MB the grader keeps free "
            "(COURSEKIT_GRADE_FREE_MB): free space and grade again")

    def flaky(student, ref, path, **_):
        runs.append(student)
        attempts.append(student)
        reason = disk if student == "alice" and attempts.count("alice") == 1 else "passed"
        return [Score(student, ref.name, c.id, c.points if reason == "passed" else 0, c.points, reason)
                for c in ref.cells]

    monkeypatch.setattr(grader, "grade_one", flaky)
    out = tmp_path / "grades.csv"
    args = ["grade", str(tmp_path / "subs"), "--reference", str(reference), "--out", str(out), "--no-progress"]
    assert main(args) == 0
    first = list(csv.DictReader(open(out, newline="")))
    assert {(r["student"], r["grader_fault"]) for r in first} == {("alice", "true"), ("bob", "false")}
    runs.clear()
    assert main(args + ["--regrade"]) == 0
    assert runs == ["alice"]                                   # same hashes, re-run anyway; bob kept
    output = capsys.readouterr()
    assert "1 notebooks re-run because the grader had failed them" in output.out
    assert "failed them: 1)" in (tmp_path / "grades-regrade-1.md").read_text()
    assert {r["points"] for r in csv.DictReader(open(out, newline="")) if r["student"] == "alice"} == {"2", "3", "1"}


def test_a_table_from_before_the_column_is_classified_by_its_reasons(tmp_path, monkeypatch):
    reference = references(tmp_path, ["01_fixture"])
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    nbformat.write(solution(), tmp_path / "subs" / "alice" / "01_fixture.ipynb")
    runs = []
    monkeypatch.setattr(grader, "grade_one", lambda student, ref, path, **_: runs.append(student) or [
        Score(student, ref.name, c.id, 0, c.points, "grader error: the run failed 3 times (KilledWorker: x); "
              "grade this notebook again") for c in ref.cells])
    out = tmp_path / "grades.csv"
    args = ["grade", str(tmp_path / "subs"), "--reference", str(reference), "--out", str(out), "--no-progress"]
    assert main(args) == 0
    rows = read_csv(out)
    write_csv(out, [row[:-1] for row in rows])                  # the table as written before grader_fault
    runs.clear()
    assert main(args + ["--regrade"]) == 0 and runs == ["alice"]


def test_a_bare_regrade_reuses_the_scope_and_every_regrade_keeps_its_report(tmp_path, recorded_runs, capsys):
    reference, download = references(tmp_path), canvas_download(tmp_path)
    roster = write_csv(tmp_path / "gradebook.csv", CANVAS_ROSTER)
    out = tmp_path / "grades.csv"
    base = ["grade", str(download), "--reference", str(reference), "--out", str(out), "--no-progress"]
    assert main(base + ["--from", "canvas", "--roster", str(roster), "--assignment", "05", "--export", "canvas"]) == 0
    capsys.readouterr()
    assert main(["grade", str(download), "--out", str(out), "--no-progress", "--regrade"]) == 0
    printed = capsys.readouterr().out
    assert f"--assignment 05, --from canvas, --roster {roster}, --missing blank, --export canvas" in printed
    assert read_csv(tmp_path / "grades-canvas.csv")[0][-1] == "Exercise 5: fixture (777)"    # roster reused
    assert {r["notebook"] for r in csv.DictReader(open(out, newline=""))} == {"05_fixture"}   # not exercise 1
    nbformat.write(make_exercise(solution()), download / "doejane_1001_5009_05_fixture.ipynb")  # hands in again
    os.remove(download / "doejane_1001_5001_05_fixture.ipynb")
    recorded_runs.clear()
    assert main(["grade", str(download), "--out", str(out), "--no-progress", "--regrade"]) == 0
    assert [r[:2] for r in recorded_runs] == [("1001", "05_fixture")]
    assert (tmp_path / "grades-regrade-1.md").exists() and (tmp_path / "grades-regrade-2.csv").exists()
    assert main(["grade", str(download), "--out", str(out), "--no-progress", "--regrade", "--assignment", "all"]) == 0
    assert {r["notebook"] for r in csv.DictReader(open(out, newline=""))} == {"01_fixture", "05_fixture"}
    assert read_csv(tmp_path / "grades-canvas.csv")[0][5:] == ["Quiz 1 (778)", "Exercise 5: fixture (777)"]
    assert (tmp_path / "grades-regrade-3.csv").exists()


@pytest.mark.slow
def test_a_canvas_class_graded_for_real_lands_in_the_gradebook(tmp_path):
    """Real runs of the fixture: a correct, a broken (row_norms rounded to 1 decimal) and an unsolved notebook."""
    reference = references(tmp_path, ["05_fixture"])
    broken = solution()
    broken.cells[4].source = "def row_norms(a):\n    return np.round(np.sqrt((a * a).sum(axis=1)), 1)"
    download = canvas_download(tmp_path, broken=broken)
    roster = write_csv(tmp_path / "gradebook.csv", CANVAS_ROSTER)
    out = tmp_path / "grades.csv"
    assert main(["grade", str(download), "--from", "canvas", "--roster", str(roster), "--out", str(out),
                 "--reference", str(reference), "--export", "canvas", "--missing", "zero", "--jobs", "2",
                 "--no-progress"]) == 0
    exported = read_csv(tmp_path / "grades-canvas.csv")
    assert exported[0] == CANVAS_HEADER[:6]
    assert [row[1::4] for row in exported[2:]] == [["1001", "6"], ["1002", "3"], ["1003", "0"], ["1004", "0"]]


@pytest.mark.slow
def test_a_real_grader_side_failure_is_run_again_by_a_regrade(tmp_path, monkeypatch):
    """The runner's own refusal (its temporary folder below the free-space floor) scores 0 as the grader's
    fault; the regrade, with the same files and judges, runs the notebook for real and gives its points."""
    from coursekit.course.grading import runner

    reference = references(tmp_path, ["01_fixture"])
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    nbformat.write(solution(), tmp_path / "subs" / "alice" / "01_fixture.ipynb")
    out = tmp_path / "grades.csv"
    args = ["grade", str(tmp_path / "subs"), "--reference", str(reference), "--out", str(out), "--no-progress"]
    monkeypatch.setattr(runner, "FREE_SPACE_FLOOR_MB", 2**40)
    assert main(args) == 0
    first = list(csv.DictReader(open(out, newline="")))
    assert all(r["points"] == "0" and r["grader_fault"] == "true" and "temporary folder" in r["reason"] for r in first)
    monkeypatch.undo()
    assert main(args + ["--regrade"]) == 0
    second = list(csv.DictReader(open(out, newline="")))
    assert [(r["reason"], r["grader_fault"]) for r in second] == [("passed", "false")] * 3
    assert sum(float(r["points"]) for r in second) == POINTS
    assert "1 notebooks graded again (submission or judges changed, or the grader had failed them: 1)" in \
        (tmp_path / "grades-regrade-1.md").read_text()
