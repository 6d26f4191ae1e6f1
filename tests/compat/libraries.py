"""Fetch the Theano libraries the compatibility runs use, at pinned versions, at run time (never vendored).

Lasagne comes from its public git repository at :data:`LASAGNE_COMMIT` (its last commit, 2019-11-20; the
PyPI release 0.1 predates the Theano 0.9 API most programs use).  ``COURSEKIT_LASAGNE_SRC`` may name
another clone or mirror of that repository (a path or URL); the commit is checked either way.  Keras
1.2.2 (the last 1.x release, Theano back end) comes from PyPI.  When neither can be had (no network),
:func:`lasagne_source` / :func:`keras_path` raise :class:`Unavailable` with the reason, and the tests
skip with it.

Keras 1.2.2 predates Python 3.11 in two places (:data:`KERAS_PYTHON_FIXES`), adapted in the installed
copy.  Two lines of Lasagne's *test* code predate NumPy 1.23 and pytest 7, and stop the suite before a single
coursekit call: :func:`lasagne_source` adapts them in the copy it returns (:data:`TEST_CODE_FIXES`).
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

LASAGNE_COMMIT = "5d3c63cb315c50b1cbd27a6bc8664b406f34dd99"
LASAGNE_REPO = "https://github.com/Lasagne/Lasagne.git"
KERAS_VERSION = "1.2.2"
CACHE = pathlib.Path(os.environ.get("COURSEKIT_COMPAT_CACHE", pathlib.Path(tempfile.gettempdir()) / "coursekit-compat"))

# (file, pattern, replacement, why): Lasagne's test code, not the library, against today's NumPy and pytest
TEST_CODE_FIXES = [
    ("lasagne/conftest.py", None, None,
     "its pytest_ignore_collect(path) hook uses an argument pytest 7 removed; it only filtered doctest "
     "collection, which the runner does not use"),
    ("lasagne/tests/layers/test_conv.py", r"output\[slices\]", "output[tuple(slices)]",
     "a list of slices as an index (NumPy >= 1.23 wants a tuple) in the NumPy reference convolution"),
    ("lasagne/tests/layers/test_conv.py", r"output\[\[slice\(None, None, factor\) for factor in factors\]\]",
     "output[tuple(slice(None, None, factor) for factor in factors)]", "the same, in the reference dilation"),
]


# (pattern, replacement, why): Keras 1.2.2's own code against Python 3.11 (applied to every keras/*.py)
KERAS_PYTHON_FIXES = [
    (r"from collections import Iterable", "from collections.abc import Iterable",
     "collections.Iterable moved to collections.abc (removed from collections in Python 3.10)"),
    (r"inspect\.getargspec\(", "inspect.getfullargspec(", "inspect.getargspec was removed in Python 3.11"),
]


class Unavailable(RuntimeError):
    """The library could not be fetched here (the message says why)."""


def _run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)


def _clone(source, dest, commit=LASAGNE_COMMIT, paths=()):
    if shutil.which("git") is None:
        raise Unavailable(f"git is not installed, so {source} cannot be cloned")
    proc = _run(["git", "clone", "--quiet", "--no-checkout", source, str(dest)])
    if proc.returncode != 0:
        raise Unavailable(f"cannot clone {source}: {proc.stderr.strip()[:300]}")
    proc = _run(["git", "-C", str(dest), "checkout", "--quiet", commit, *(["--", *paths] if paths else [])])
    if proc.returncode != 0:
        raise Unavailable(f"{source} has no commit {commit}: {proc.stderr.strip()[:300]}")


def checkout(name, url, commit, env_var, fix=None, sparse=()):
    """A directory holding the repository ``url`` at ``commit`` (``env_var`` may name a local clone or
    mirror instead); ``fix(root)`` adapts it once, when it is first fetched; ``sparse``: only these paths."""
    dest = CACHE / f"{name}-{commit[:12]}"
    if not dest.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        work = pathlib.Path(tempfile.mkdtemp(dir=CACHE))
        _clone(os.environ.get(env_var, url), work / "src", commit, sparse)
        if fix is not None:
            fix(work / "src")
        (work / "src").rename(dest)
        shutil.rmtree(work, ignore_errors=True)
    return dest


def python2_prints_to_python3(root):
    """Rewrite Python 2 ``print x`` statements as ``print(x)`` calls (lib2to3's print fixer, nothing else)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from lib2to3 import refactor

    tool = refactor.RefactoringTool(["lib2to3.fixes.fix_print"])
    for path in sorted(root.glob("*.py")):
        try:
            path.write_text(str(tool.refactor_string(path.read_text(), str(path))))
        except Exception:  # noqa: BLE001 - lib2to3 cannot parse it: leave the file as it is
            continue


def lasagne_source():
    """A directory holding Lasagne at :data:`LASAGNE_COMMIT`, its test code adapted (see the module doc)."""
    dest = CACHE / f"lasagne-{LASAGNE_COMMIT[:12]}"
    if not (dest / "lasagne" / "__init__.py").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        work = pathlib.Path(tempfile.mkdtemp(dir=CACHE))
        _clone(os.environ.get("COURSEKIT_LASAGNE_SRC", LASAGNE_REPO), work / "src")
        _apply_test_code_fixes(work / "src")
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        (work / "src").rename(dest)
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _apply_test_code_fixes(root):
    for name, pattern, replacement, _why in TEST_CODE_FIXES:
        path = root / name
        if pattern is None:
            path.unlink(missing_ok=True)
            continue
        text = path.read_text()
        new = re.sub(pattern, replacement, text)
        if new == text:
            raise Unavailable(f"the test-code fix for {name} no longer applies ({pattern!r} not found)")
        path.write_text(new)


def keras_path():
    """A directory to put on ``sys.path`` that holds Keras :data:`KERAS_VERSION` (installed from PyPI)."""
    import importlib.util

    for needed in ("six", "scipy"):  # what Keras 1.2.2 imports at import time besides NumPy and Theano
        if importlib.util.find_spec(needed) is None:
            raise Unavailable(f"Keras {KERAS_VERSION} needs the {needed!r} package, which is not installed here")
    dest = CACHE / f"keras-{KERAS_VERSION}"
    if not (dest / "keras" / "__init__.py").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        proc = _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(dest),
                     f"keras=={KERAS_VERSION}"])
        if proc.returncode != 0 or not (dest / "keras" / "__init__.py").exists():
            raise Unavailable(f"pip cannot install keras=={KERAS_VERSION}: {proc.stderr.strip()[-300:]}")
        for path in (dest / "keras").rglob("*.py"):
            text = path.read_text()
            new = text
            for pattern, replacement, _why in KERAS_PYTHON_FIXES:
                new = re.sub(pattern, replacement, new)
            if new != text:
                path.write_text(new)
    return dest
