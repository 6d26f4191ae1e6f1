"""A student's copy of the course: ``coursekit start``, ``coursekit release`` (issue 33, item 2).

The course comes out of the package (here: the editable checkout's notebooks/ and exercises/); the
manifest of hashes lets a later start add what is new without ever overwriting a student's change.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from lab_server import lab_server

from coursekit.__main__ import main
from coursekit.course.authoring import release as release_module
from coursekit.course.student import layout, start

ROOT = Path(__file__).resolve().parents[3]


def fake_course(version):
    return {"notebooks/01_a.ipynb": f'{{"lesson": 1, "v": {version}}}'.encode(),
            "exercises/01_a_exercises.ipynb": f'{{"exercise": 1, "v": {version}}}'.encode()}


def test_the_course_is_every_lesson_and_exercise_and_no_solution():
    files = layout.course_files()
    assert sorted(files) == sorted([f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")]
                                   + [f"exercises/{p.name}" for p in (ROOT / "exercises").glob("*.ipynb")])
    assert len(files) == 22 and not [n for n in files if "solution" in n]


def test_start_copies_then_keeps_the_students_change_and_adds_what_is_new(tmp_path, capsys):
    folder = tmp_path / "course"
    first = start.copy_course(folder, files=fake_course(1))
    assert sorted(first.added) == sorted(fake_course(1)) and (folder / start.MANIFEST).is_file()
    (folder / "notebooks/01_a.ipynb").write_text('{"my": "work"}')
    upgraded = dict(fake_course(2), **{"notebooks/02_b.ipynb": b'{"lesson": 2}'})
    second = start.copy_course(folder, files=upgraded)
    assert second.added == ["notebooks/02_b.ipynb"]
    assert second.kept == ["notebooks/01_a.ipynb"] and (folder / "notebooks/01_a.ipynb").read_text() == '{"my": "work"}'
    assert second.outdated == ["exercises/01_a_exercises.ipynb"]    # untouched, newer version: only with --update
    assert (folder / "exercises/01_a_exercises.ipynb").read_bytes() == fake_course(1)["exercises/01_a_exercises.ipynb"]
    lines = "\n".join(second.lines(folder))
    assert "kept notebooks/01_a.ipynb: you changed it" in lines and "--update" in lines
    third = start.copy_course(folder, update=True, files=upgraded)
    assert third.updated == ["exercises/01_a_exercises.ipynb"] and third.kept == ["notebooks/01_a.ipynb"]
    assert (folder / "notebooks/01_a.ipynb").read_text() == '{"my": "work"}'
    assert (folder / "notebooks/01_a.new.ipynb").read_bytes() == upgraded["notebooks/01_a.ipynb"]
    assert start.copy_course(folder, update=True, files=upgraded).updated == []


def test_a_notebook_that_was_there_before_the_first_start_is_kept(tmp_path):
    folder = tmp_path / "course"
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks/01_a.ipynb").write_text("mine")
    done = start.copy_course(folder, update=True, files=fake_course(1))
    assert done.kept == ["notebooks/01_a.ipynb"] and (folder / "notebooks/01_a.ipynb").read_text() == "mine"


def test_a_damaged_manifest_is_named_with_its_fix(tmp_path):
    (tmp_path / start.MANIFEST).write_text("{not json")
    with pytest.raises(ValueError, match=r"is damaged .*delete it and run `coursekit start"):
        start.copy_course(tmp_path, files=fake_course(1))


def test_start_no_lab_on_the_command_line(tmp_path, capsys):
    assert main(["start", str(tmp_path / "c"), "--no-lab"]) == 0
    assert "added 22" in capsys.readouterr().out
    assert main(["start", str(tmp_path / "c"), "--no-lab"]) == 0
    assert "is up to date (22 notebooks)" in capsys.readouterr().out
    (tmp_path / "file").write_text("x")
    assert main(["start", str(tmp_path / "file"), "--no-lab"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


@pytest.mark.slow
def test_start_opens_jupyterlab_on_the_course_folder_at_lesson_1(tmp_path):
    folder = tmp_path / "course"
    start.copy_course(folder)
    command = start.lab_command(folder)
    assert command[:3] == [sys.executable, "-m", "jupyterlab"]
    with lab_server([*command[3:], "--ServerApp.browser=true %s"], tmp_path, cwd=folder) as lab:
        deadline = time.monotonic() + 90
        while True:
            opened = list((tmp_path / "runtime").glob("jpserver-file-to-run-*-open.html"))
            try:
                with urllib.request.urlopen(f"{lab.base}/api/contents/exercises?token={lab.token}", timeout=2) as r:
                    listing = json.load(r)
                if opened:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or lab.process.poll() is not None:
                pytest.fail("JupyterLab did not serve the course folder and open lesson 1 within 90 s")
            time.sleep(0.5)
        page = opened[0].read_text(encoding="utf-8")
    assert "01_tour_exercises.ipynb" in {entry["name"] for entry in listing["content"]}
    assert "/lab/tree/notebooks/01_tour.ipynb" in page


def test_release_writes_the_student_folder_and_zip_and_refuses_a_used_folder(tmp_path, capsys):
    out = tmp_path / "release"
    assert main(["release", str(out)]) == 0
    assert "no line of solutions/ in either" in capsys.readouterr().out
    names = zipfile.ZipFile(tmp_path / "release.zip").namelist()
    assert "release/notebooks/01_tour.ipynb" in names and "release/exercises/11_gpu_memory_counted_exercises.ipynb" in names
    assert not [n for n in names if "solution" in n]
    assert main(["release", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err


def test_release_deletes_what_it_wrote_when_an_answer_leaked(tmp_path, monkeypatch):
    leaked = dict(layout.course_files())
    leaked["exercises/05_logistic_regression_exercises.ipynb"] = \
        (ROOT / "solutions" / "05_logistic_regression_solutions.ipynb").read_bytes()
    monkeypatch.setattr(release_module, "course_files", lambda: leaked)
    with pytest.raises(release_module.ReleaseError, match="answer lines found in the release"):
        release_module.release(tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.zip").exists()


def test_doctor_runs_from_the_command_line():
    run = subprocess.run([sys.executable, "-m", "coursekit", "doctor"], capture_output=True, text=True)
    assert "lesson and exercise 07:" in run.stdout and "C++ compiler" in run.stdout, run.stdout + run.stderr


def test_doctor_uses_the_emulators_compiler_rule(monkeypatch):
    from coursekit.cuda import compiler
    from coursekit.course.student import doctor

    for value in ("clang++", "g++-12"):
        monkeypatch.setenv("CXX", value)
        assert doctor.cxx() == compiler.cxx() == value
    monkeypatch.delenv("CXX")
    assert doctor.cxx() == compiler.cxx()


def test_doctor_without_a_compiler_names_the_lessons_and_the_fix_per_os(monkeypatch):
    from coursekit.course.student import doctor

    monkeypatch.setenv("CXX", "no-such-compiler-here")
    lines, status = doctor.report()
    text = "\n".join(lines)
    assert status == 1 and "MISSING C++ compiler" in text and "no-such-compiler-here: not found" in text
    assert "lesson and exercise 07: lacks a C++ compiler" in text and "lesson and exercise 08: ready" in text
    assert "xcode-select --install" in doctor.compiler_fix("Darwin") and "WSL2" in doctor.compiler_fix("Windows")
    assert "apt-get install g++" in doctor.compiler_fix("Linux")
