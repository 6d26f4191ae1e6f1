"""Replay a graded cell's judge on observations that hold no answer (issue 22: "judges judge answers").

A run of the reference solution leaves each judged cell's real observations (``<cell id>.npz``, see
:func:`coursekit.course.grading.runner.run_notebook`'s ``reports_path``). :func:`variants` turns them into
observations a student could report without solving anything — nothing at all, empty containers,
every number 0 or 1, the right shapes full of noise, NaN everywhere, the inputs echoed back — and
:func:`verdict` runs the cell's *reference* judge on them exactly as the grader does (the inputs
rebuilt from the run's nonce, the observations through the safe format). Each must fail.

The broadcast kinds (issue 39) give each numeric array a shape NumPy broadcasts against the answer:
``(0, 1)`` (an empty comparison, True for ``np.allclose``), ``(1,)`` and a 0-d array holding the real
first value, ``(k, 1)`` holding the real first column. ``all_zero_by_one`` makes every array
``(0, 1)``; ``mixed_j`` gives the i-th array of the report the shape ``BROADCAST[(i + j) % 4]``, so each
observation meets each shape in one of the four, beside the others'. A report without numeric arrays
(only numbers, strings, lists) has nothing to broadcast and gets none of these kinds.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np

from coursekit.course.student import check

BROADCAST = ("zero_by_one", "one", "column", "scalar")     # shapes NumPy broadcasts against an answer's
KINDS = ("missing", "empty", "zeros", "ones", "shape_only", "nan", "echo", "all_zero_by_one",
         *(f"mixed_{k}" for k in range(len(BROADCAST))))


def _map(value, leaf):
    if isinstance(value, dict):
        return {k: _map(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, leaf) for v in value]
    return leaf(value)


def _empty(value):
    if isinstance(value, np.ndarray):
        return np.zeros((0,) * max(value.ndim, 1), value.dtype)
    if isinstance(value, (list, tuple)):
        return []
    if isinstance(value, dict):
        return {}
    if isinstance(value, str):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, float, np.number)):
        return 0
    return value


def _number_leaf(make_array, make_scalar, make_bool=bool):
    """Numbers (arrays included) through ``make_*``, booleans through ``make_bool``; strings and None
    are kept (names of ops or kernels, types), so only the numbers and the yes/no answers go."""
    def leaf(value):
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            return make_array(value)
        if isinstance(value, (bool, np.bool_)):
            return make_bool(value)
        if not isinstance(value, (int, float, np.number)):
            return value
        return make_scalar(value)
    return leaf


def _echo(given):
    arrays = [v for v in given.values() if isinstance(v, np.ndarray) and v.dtype.kind in "biuf"]
    scalars = [v for v in given.values() if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)]

    def array(value):
        same = [a for a in arrays if a.shape == value.shape] or [a for a in arrays if a.ndim == value.ndim] or arrays
        return same[0].astype(value.dtype) if same else np.zeros_like(value)

    return _number_leaf(array, lambda v: type(v)(scalars[0]) if scalars else type(v)(0), lambda v: False)


def _broadcastable(value, kind):
    """``value`` (a numeric array) reshaped to one of :data:`BROADCAST`, keeping real numbers."""
    flat = value.reshape(-1)
    first = flat[:1] if flat.size else np.zeros(1, value.dtype)
    if kind == "zero_by_one":
        return np.zeros((0, 1), value.dtype)
    if kind == "one":
        return first.copy()
    if kind == "scalar":
        return first.reshape(()).copy()
    rows = value.shape[0] if value.ndim else 1
    return value.reshape(rows, -1)[:, :1].copy() if value.size else np.zeros((rows, 1), value.dtype)


def _mixed(offset):
    count = [0]

    def leaf(value):
        if not (isinstance(value, np.ndarray) and value.dtype.kind in "biufc"):
            return value
        count[0] += 1
        return _broadcastable(value, BROADCAST[(count[0] - 1 + offset) % len(BROADCAST)])
    return leaf


def variants(seen: dict, given: dict, rng) -> dict[str, dict]:
    """``{kind: observations}`` for every kind of :data:`KINDS`, from the real ``seen``."""
    def noise(value):
        if value.dtype.kind in "iub":
            return rng.integers(0, 3, value.shape).astype(value.dtype)
        return rng.standard_normal(value.shape).astype(value.dtype)

    leaves = {
        "empty": _empty,
        "zeros": _number_leaf(np.zeros_like, lambda v: type(v)(0), lambda v: False),
        "ones": _number_leaf(np.ones_like, lambda v: type(v)(1), lambda v: True),
        "shape_only": _number_leaf(noise, lambda v: type(v)(rng.integers(0, 3)), lambda v: bool(rng.integers(0, 2))),
        "nan": _number_leaf(lambda v: np.full_like(v, np.nan) if v.dtype.kind in "fc" else np.zeros_like(v),
                            lambda v: float("nan") if isinstance(v, float) else type(v)(0), lambda v: False),
        "echo": _echo(given),
        "all_zero_by_one": lambda v: _broadcastable(v, "zero_by_one")
        if isinstance(v, np.ndarray) and v.dtype.kind in "biufc" else v,
        **{f"mixed_{k}": _mixed(k) for k in range(len(BROADCAST))},
    }
    found = {"missing": {}, "empty": {name: _empty(value) for name, value in seen.items()}}
    arrays = []
    _map(seen, lambda v: arrays.append(v) if isinstance(v, np.ndarray) and v.dtype.kind in "biufc" else v)
    if not arrays:         # nothing to reshape: the broadcast kinds would be the real report itself
        leaves = {k: v for k, v in leaves.items() if k != "all_zero_by_one" and not k.startswith("mixed_")}
    for kind, leaf in leaves.items():
        if kind != "empty":                     # empty containers at the top, not emptied elements
            found[kind] = {name: _map(value, leaf) for name, value in seen.items()}
    return found


def judge_parts(source: str):
    """``(inputs, judge)`` of a graded cell's source, by running it with graded_check intercepted."""
    caught = {}

    def intercept(cell_id, inputs, probe, judge, *, seed):
        caught.update(inputs=inputs, judge=judge)

    real = check.graded_check
    check.graded_check = intercept
    try:
        with contextlib.redirect_stdout(io.StringIO()):      # the cell's PASSED line
            exec(compile(source, "<graded cell>", "exec"), {"__name__": "__coursekit_judge__"})
    finally:
        check.graded_check = real
    return caught["inputs"], caught["judge"]


def verdict(source: str, cell_id: str, nonce: str, observations: dict, given: dict | None = None) -> str:
    """"passed" or the failure, for ``observations`` judged by the cell's reference judge."""
    inputs, judge = judge_parts(source)
    if given is None:
        given = inputs(np.random.default_rng(check.grading_seed(nonce, cell_id)), check.size_is_small())
    try:
        seen = check.decode(check.encode(nonce, cell_id, observations), nonce=nonce, cell_id=cell_id)
        check._call_judge(judge, given, seen)
    except Exception as exc:  # noqa: BLE001 -- AssertionError, or observations the judge cannot use: both score 0
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return "passed"


def given_inputs(source: str, cell_id: str, nonce: str) -> dict:
    inputs, _ = judge_parts(source)
    return inputs(np.random.default_rng(check.grading_seed(nonce, cell_id)), check.size_is_small())
