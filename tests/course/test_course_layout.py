"""The course machinery's three rooms, and the old module paths that files outside the repository name.

An exercise notebook handed out before the split has ``from coursekit.course.check import graded_check`` in
its graded cells, and a lesson a student saved has ``from coursekit.course.lesson import ...``: both still
import, as the very module at the new path, in a fresh interpreter (as a student's kernel would).
"""

from __future__ import annotations

import subprocess
import sys


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_an_old_graded_cell_import_gets_the_student_check_module_itself():
    done = _run("import sys\n"
                "from coursekit.course.check import graded_check\n"
                "import coursekit.course.student.check as new\n"
                "assert graded_check is new.graded_check\n"
                "assert sys.modules['coursekit.course.check'] is new\n"
                "print(sorted(m for m in sys.modules if m.startswith('coursekit.')))")
    assert done.returncode == 0, done.stderr
    assert "coursekit.tensor" not in done.stdout    # the kernel pays for the check only


def test_an_old_lesson_import_gets_the_lesson_helpers():
    done = _run("import sys\n"
                "from coursekit.course.lesson import time_call, size\n"
                "import coursekit.lessons\n"
                "assert time_call is coursekit.lessons.time_call\n"
                "assert sys.modules['coursekit.course.lesson'] is coursekit.lessons")
    assert done.returncode == 0, done.stderr


def test_only_the_old_paths_outside_files_name_are_kept():
    done = _run("import coursekit.course.grader")    # moved, and no file outside the repository names it
    assert done.returncode != 0 and "No module named 'coursekit.course.grader'" in done.stderr
