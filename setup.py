"""Build step: put the student course (lessons and exercises, never solutions) into the package.

Why a build step rather than moving the notebooks: the repository keeps ``notebooks/``, ``exercises/``
and ``solutions/`` side by side at the top, where the README, the tests, nbval and the authors expect
them; setuptools only packages files inside a package. So ``build_py`` copies exactly the student
files (``coursekit.course.student.layout.STUDENT_GLOBS``) into ``coursekit/course_files/`` of the build,
and the wheel carries them as package data. The sdist carries ``notebooks/`` and ``exercises/``
(MANIFEST.in; ``solutions/`` and ``tests/`` are pruned), so a wheel built from the sdist gets the same
files. An editable install has no copy: ``coursekit start`` then reads the checkout's folders.
Everything else about the package is in pyproject.toml.
"""
from __future__ import annotations

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# The student course: the only files copied into the package (mirrored in
# coursekit/course/student/layout.py, which a test keeps equal to this list).
STUDENT_GLOBS = ("notebooks/*.ipynb", "exercises/*.ipynb")


class BuildWithCourse(build_py):
    """``build_py`` that also copies the student course into ``coursekit/course_files/``."""

    def run(self):
        super().run()
        if self.editable_mode:
            return
        target = os.path.join(self.build_lib, "coursekit", "course_files")
        copied = 0
        for pattern in STUDENT_GLOBS:
            for path in sorted(glob.glob(os.path.join(HERE, pattern))):
                relative = os.path.relpath(path, HERE)
                if "solution" in relative:
                    raise SystemExit(f"setup.py: refusing to package {relative}: solutions never ship")
                destination = os.path.join(target, relative)
                os.makedirs(os.path.dirname(destination), exist_ok=True)
                shutil.copyfile(path, destination)
                copied += 1
        if copied == 0:
            raise SystemExit("setup.py: no notebooks found under notebooks/ or exercises/; build from the "
                             "repository root or from an sdist")


setup(cmdclass={"build_py": BuildWithCourse})
