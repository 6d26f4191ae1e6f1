"""Graded checks the student's kernel cannot forge: a *probe* in the kernel, a *judge* outside it.

A graded cell written with :func:`graded_check` has three parts, all in the cell itself::

    def inputs(rng, small):          # the check's data, from a seeded generator (pure NumPy)
        return {"stream": rng.standard_normal(37 if small else 1_009)}

    def probe(stream):               # runs the student's code on those inputs; returns what it saw
        step, total, count = make_running_mean()
        return {"means": [float(step(v)) for v in stream], "total": float(total.get_value())}

    def judge(stream, means, total): # asserts on the observations against its own reference
        assert np.allclose(means, np.cumsum(stream) / np.arange(1, stream.size + 1)), "..."

    graded_check("running-mean", inputs, probe, judge, seed=1101)

**In JupyterLab** all three run in the student's kernel, at once: the observations make a round
trip through the safe format below (so the student sees exactly what the grader will judge), then
the judge asserts and the cell prints its PASSED line.

**When grading**, the runner gives the kernel a report folder and a per-run nonce
(``COURSEKIT_REPORT_DIR``, ``COURSEKIT_REPORT_NONCE``). The seed then comes from the nonce and the
cell id, so the inputs are new in every run. The kernel still runs the cell as above, and also
writes its observations to ``<report dir>/<cell id>.npz``: a zip of ``.npy`` arrays and one JSON
member, never a pickle. After the notebook has run, the grader's own process (see
:func:`judge_cells`) executes the *reference* source of each graded cell (restored by the grader,
never the student's copy) with :func:`graded_check` switched to judging: it rebuilds the inputs
from the same seed, loads the observations with ``allow_pickle=False`` after checking size and
file type, and runs the judge. That verdict is the grade; the kernel's own assert is feedback.

What this defeats: anything that bends the *comparison* — an IPython input transformer that turns
the graded cell into ``pass`` (nothing is reported: 0 points), a monkeypatched ``np.allclose`` or
``coursekit`` function (the judge's NumPy and reference are the grader's), an edited or deleted
check, results computed for other inputs (the seed is new each run). What remains forgeable, and
cannot be otherwise while the student's code runs in the student's process: the *observations*.
A kernel determined to cheat can report values that did not come from the student's function (for
instance the judge's own reference, recomputed in a hook on the run's inputs), and any observation
about the student's graph (op names, devices, transfer counts) is the student's process's word.
The grader lists, under "Warnings" in ``grades.md``, every non-graded cell that names these
mechanisms (see :mod:`coursekit.course.grading.scrutiny`), for a person to read: a hint that changes no
score, and that code building the names from pieces escapes.

Observations are plain data: NumPy arrays and scalars (kept with their dtype), and ``None``,
booleans, numbers and strings, alone or in lists, tuples and dicts with string keys (these come back
as JSON values: tuples as lists). Anything else (an object array, a device array, a function) is
refused with a message naming the observation. This module imports NumPy and the standard library
only, so a kernel pays no more than that for it.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import stat
import zipfile
from dataclasses import dataclass, field

import numpy as np

REPORT_DIR_ENV = "COURSEKIT_REPORT_DIR"
NONCE_ENV = "COURSEKIT_REPORT_NONCE"
REPORT_LIMIT = 64 * 1024 * 1024      # bytes of observations one graded cell may report
JSON_MEMBER = "observations.json"
ARRAY_PREFIX = "arrays/"


class NotReported(Exception):
    """The graded cell left no usable observations in this run (it did not run as restored)."""


def grading_seed(nonce: str, cell_id: str) -> int:
    """The seed of a cell's inputs in one grading run: new for every run, the same on both sides."""
    return int.from_bytes(hashlib.sha256(f"{nonce}:{cell_id}".encode()).digest()[:8], "little")


def size_is_small() -> bool:
    return os.environ.get("COURSEKIT_SIZE", "small") == "small"


# --- the safe format -----------------------------------------------------------------------------


def _plain(value, name: str):
    """``value`` as JSON data, or raise TypeError naming the observation."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{name}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()
    raise TypeError(f"observation {name!r} is a {type(value).__name__}; report arrays, numbers, strings, "
                    f"booleans or None (lists and dicts of them), e.g. np.asarray(...) or float(...)")


def encode(nonce: str, cell_id: str, seen: dict) -> bytes:
    """The observations as a zip of ``.npy`` arrays plus one JSON member (no pickle anywhere)."""
    if not isinstance(seen, dict):
        raise TypeError(f"the probe must return a dict of observations, not a {type(seen).__name__}")
    buffer = io.BytesIO()
    plain = {}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, value in seen.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise TypeError(f"observation names must be identifiers, got {name!r}")
            if isinstance(value, np.ndarray) or (isinstance(value, np.generic) and not isinstance(value, np.bool_)):
                array = np.asarray(value)
                if array.dtype.hasobject or array.dtype.kind not in "biufcUS":
                    raise TypeError(f"observation {name!r} is an array of {array.dtype}; report numbers or "
                                    f"strings (object arrays are refused)")
                member = io.BytesIO()
                np.lib.format.write_array(member, array, allow_pickle=False)
                archive.writestr(ARRAY_PREFIX + name + ".npy", member.getvalue())
            else:
                plain[name] = _plain(value, name)
        archive.writestr(JSON_MEMBER, json.dumps({"nonce": nonce, "cell": cell_id, "values": plain}))
    data = buffer.getvalue()
    if len(data) > REPORT_LIMIT:
        raise ValueError(f"the observations take {len(data)} bytes, more than the {REPORT_LIMIT} a graded "
                         f"cell may report")
    return data


def decode(data: bytes, *, nonce: str | None, cell_id: str) -> dict:
    """Observations from :func:`encode`'s bytes; arrays are read with ``allow_pickle=False``.

    Raises :class:`NotReported` when the data are not a report of this cell in this run.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
        if sum(m.file_size for m in members) > REPORT_LIMIT:
            raise NotReported("the cell's report is larger than a graded cell may report")
        meta = json.loads(archive.read(JSON_MEMBER))
        if not isinstance(meta, dict) or meta.get("cell") != cell_id or (nonce is not None and meta.get("nonce") != nonce):
            raise NotReported("the cell's report belongs to another cell or another run")
        seen = dict(meta.get("values") or {})
        for member in members:
            if member.filename.startswith(ARRAY_PREFIX) and member.filename.endswith(".npy"):
                name = member.filename[len(ARRAY_PREFIX):-4]
                with archive.open(member) as handle:
                    array = np.lib.format.read_array(handle, allow_pickle=False)
                seen[name] = array[()] if array.ndim == 0 else array
        return seen
    except NotReported:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, RecursionError, EOFError) as exc:
        raise NotReported(f"the cell's report is unreadable ({type(exc).__name__})") from None


def read_report(report_dir: str, cell_id: str) -> bytes:
    """The bytes of ``<report_dir>/<cell_id>.npz``, refusing links, devices, FIFOs and oversized files
    (the folder is writable by the untrusted kernel)."""
    path = os.path.join(report_dir, f"{cell_id}.npz")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        raise NotReported("the cell reported nothing") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotReported("the cell's report is not a regular file")
        if info.st_size > REPORT_LIMIT:
            raise NotReported("the cell's report is larger than a graded cell may report")
        return handle.read(REPORT_LIMIT + 1)


# --- the two sides -------------------------------------------------------------------------------


@dataclass
class _Judging:
    """Set while the grader judges: where the reports are and which run they must belong to."""

    report_dir: str
    nonce: str
    judged: list = field(default_factory=list)     # cell ids graded_check judged in this exec


_JUDGING: _Judging | None = None


@contextlib.contextmanager
def judging(report_dir: str, nonce: str):
    """Within this block :func:`graded_check` judges reported observations instead of probing."""
    global _JUDGING
    previous, _JUDGING = _JUDGING, _Judging(str(report_dir), nonce)
    try:
        yield _JUDGING
    finally:
        _JUDGING = previous


def graded_check(cell_id: str, inputs, probe, judge, *, seed: int) -> None:
    """Run one graded check: ``judge(**inputs, **probe(**inputs))`` (see the module docstring).

    ``inputs(rng, small)`` returns a dict of the check's data (``rng`` a NumPy Generator, ``small``
    True at ``COURSEKIT_SIZE=small``); ``probe`` gets a copy of it as keyword arguments and returns
    a dict of observations; ``judge`` gets both as keyword arguments and raises AssertionError with
    a message when the work is wrong. ``seed`` gives the inputs a student sees in JupyterLab.
    """
    __tracebackhide__ = True   # IPython leaves this frame out of a student's traceback
    if _JUDGING is not None:
        _judge_reported(cell_id, inputs, judge)
        return
    nonce = os.environ.get(NONCE_ENV)
    report_dir = os.environ.get(REPORT_DIR_ENV)
    grading = bool(nonce and report_dir)
    given = inputs(np.random.default_rng(grading_seed(nonce, cell_id) if grading else seed), size_is_small())
    seen = probe(**copy.deepcopy(given))
    data = encode(nonce or "", cell_id, seen)
    if grading:
        target = os.path.join(report_dir, f"{cell_id}.npz")
        with open(target + ".part", "wb") as handle:
            handle.write(data)
        os.replace(target + ".part", target)
    _call_judge(judge, given, decode(data, nonce=None, cell_id=cell_id))


# --- comparisons for judges: shape and dtype before values -----------------------------------------


def _numbers(got, want, what: str, dtype) -> np.ndarray:
    """``got`` as an array after checking it is numbers of ``want``'s shape (and ``dtype`` when given).

    Why first: NumPy broadcasts before it compares, so ``np.allclose(np.zeros((0, 1)), want)`` is an
    empty comparison and True, and a ``(1,)`` or ``(k, 1)`` observation is compared with every row.
    """
    __tracebackhide__ = True
    array = np.asarray(got) if isinstance(got, (np.ndarray, np.generic, int, float, list, tuple)) else None
    if array is None or array.dtype.kind not in "iufc" or isinstance(got, bool):
        raise AssertionError(f"{what}: expected numbers, got {type(got).__name__}"
                             f"{'' if array is None else ' of ' + str(array.dtype)}")
    shape = np.shape(want)
    if array.shape != shape:
        raise AssertionError(f"{what}: expected shape {shape}, got {array.shape}")
    if dtype is not None and array.dtype != np.dtype(dtype):
        raise AssertionError(f"{what}: expected {np.dtype(dtype)}, got {array.dtype}")
    return array


def close_each(got, want, *, rtol=1e-5, atol=1e-8, dtype=None, what="the result") -> np.ndarray:
    """``np.isclose(got, want)`` elementwise, after :func:`_numbers`' shape (and dtype) check."""
    __tracebackhide__ = True
    return np.isclose(_numbers(got, want, what, dtype), want, rtol=rtol, atol=atol)


def close(got, want, *, rtol=1e-5, atol=1e-8, dtype=None, what="the result") -> bool:
    """``np.allclose(got, want)``, after :func:`_numbers`' shape (and dtype) check (a wrong shape or
    dtype raises AssertionError naming both, instead of broadcasting)."""
    __tracebackhide__ = True
    return bool(close_each(got, want, rtol=rtol, atol=atol, dtype=dtype, what=what).all())


def equal(got, want, *, dtype=None, what="the result") -> bool:
    """``np.array_equal(got, want)``, after :func:`_numbers`' shape (and dtype) check."""
    __tracebackhide__ = True
    return bool(np.array_equal(_numbers(got, want, what, dtype), want))


def _judge_reported(cell_id: str, inputs, judge) -> None:
    __tracebackhide__ = True   # IPython leaves this frame out of a student's traceback
    state = _JUDGING
    state.judged.append(cell_id)
    seen = decode(read_report(state.report_dir, cell_id), nonce=state.nonce, cell_id=cell_id)
    given = inputs(np.random.default_rng(grading_seed(state.nonce, cell_id)), size_is_small())
    _call_judge(judge, given, seen)


def _call_judge(judge, given: dict, seen: dict) -> None:
    __tracebackhide__ = True   # IPython leaves this frame out of a student's traceback
    clash = set(given) & set(seen)
    if clash:
        raise TypeError(f"observations {sorted(clash)} have the names of inputs; rename them in the probe")
    judge(**given, **seen)
