"""The library's errors and warnings speak of the library, not of the course (issue 10, defect 6).

coursekit is also used outside the course (Theano scripts, benchmarks), so a message raised by the
library itself must not send its reader to a lesson or an exercise; only ``coursekit.course`` (the
grader and the checks students run), ``coursekit.lessons`` (the lessons' own helpers, moved out of
``course/`` in issue 37) and the command line may.  This reads every ``raise`` and every
``...Error(...)`` / ``warn(...)`` call of the other modules and looks at the string literals in it.
"""
import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "coursekit"
COURSE_WORDS = re.compile(r"\b(course|lessons?|exercises?|students?|graded|grader)\b", re.I)
ALLOWED = ("course/", "lessons/", "__main__.py")


def message_literals(tree):
    """(line, text) of every string literal inside a raise, an exception's constructor or a warn() call."""
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name != "warn" and not name.endswith(("Error", "Exception", "Warning", "Interrupt")):
                continue
        elif not isinstance(node, ast.Raise):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in seen:
                seen.add(id(sub))
                yield sub.lineno, sub.value


def test_library_messages_do_not_use_course_wording():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(ALLOWED):
            continue
        for line, text in message_literals(ast.parse(path.read_text(encoding="utf-8"))):
            if COURSE_WORDS.search(text):
                found.append(f"coursekit/{relative}:{line}: {text[:100]!r}")
    assert not found, "course wording in library messages:\n" + "\n".join(found)


def test_the_check_sees_course_wording():
    source = 'raise ValueError("see lesson 3")\nwarnings.warn(f"as the course says {x}")\nprint("lesson")\n'
    texts = [text for _, text in message_literals(ast.parse(source))]
    assert [t for t in texts if COURSE_WORDS.search(t)] == ["see lesson 3", "as the course says "]
