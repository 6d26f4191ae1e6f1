"""No function in ``coursekit/course/`` is over 60 lines (issue 37): each reads in one screen, and can be
tested alone.

Read from the source with ``ast``. A function's length runs from its ``def`` line to its last line,
docstring and comments included. The functions listed in ``BEING_SPLIT`` are over the limit today and
have an owner splitting them; the list must shrink, never hide anything: a listed function that is no
longer over the limit (or no longer exists) fails the test too, so the entry is removed when the split lands.
"""
from __future__ import annotations

import ast
from pathlib import Path

COURSE = Path(__file__).resolve().parents[2] / "coursekit" / "course"
LIMIT = 60

# "path relative to coursekit/course::function": who is splitting it
BEING_SPLIT: dict[str, str] = {}


def _lengths(root=COURSE):
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{path.relative_to(root).as_posix()}::{node.name}"
                found[key] = max(found.get(key, 0), node.end_lineno - node.lineno + 1)
    return found


def _too_long(root=COURSE, allowed=BEING_SPLIT):
    return {key: lines for key, lines in _lengths(root).items() if lines > LIMIT and key not in allowed}


def test_no_function_in_the_course_machinery_is_over_60_lines():
    long = _too_long()
    assert not long, (f"functions over {LIMIT} lines in coursekit/course/ (split them into steps that "
                      f"each say what they do): {long}")


def test_every_function_listed_as_being_split_is_still_long():
    lengths = _lengths()
    done = {key: lengths.get(key, "gone") for key in BEING_SPLIT if lengths.get(key, 0) <= LIMIT}
    assert not done, f"remove these from BEING_SPLIT: they are {LIMIT} lines or fewer now (or gone): {done}"


def test_the_check_finds_a_long_method_in_a_subpackage(tmp_path):
    (tmp_path / "room").mkdir()
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT - 1))
    (tmp_path / "room" / "m.py").write_text(f"class C:\n    def ok(self):\n{body}\n\n    def long(self):\n{body}\n"
                                            "        return x0\n")
    assert _too_long(tmp_path, {}) == {"room/m.py::long": LIMIT + 1}
    assert _too_long(tmp_path, {"room/m.py::long": "someone"}) == {}
