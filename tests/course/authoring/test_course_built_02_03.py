"""Exercises 2 and 3: the built tasks are judged by what the student's code did, not by a value.

Issue 25 asks every exercise to give at least half its points for something the student builds.
Exercise 2's ``timing-loop`` now runs the student's harness on a fake asynchronous device with a
virtual clock that records every ``fn()``, ``sync()`` and ``clock()`` (every clock reading must
follow a sync of the work queued before it), and on the simulated GPU with a modelled asynchronous
timeline (kernels and syncs counted). Exercise 3's ``keep-borrowed`` counts the trips to the host
``keep_results`` makes on the simulated GPU and which buffers the kept results share. Each answer runs
in this process after the notebook's setup cell and is judged twice, as in a grading run
(``judged_twice``); the reports it leaves are then made degenerate (``degenerate.py``) and must fail.
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import numpy as np
import pytest
from answers import substitute
from course_cells import imports_cell
from judged_twice import run_judged_twice, solution_cell

import degenerate
from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV, decode
from coursekit.course.authoring.graded import graded_cells

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = {k: nbformat.read(next((ROOT / "solutions").glob(f"{k}_*.ipynb")), as_version=4) for k in ("02", "03")}
GRADED = {k: {c.id: c.source for c in graded_cells(nb)} for k, nb in NOTEBOOKS.items()}
NONCE = "built-02-03-test-run"


@pytest.fixture
def run(monkeypatch, tmp_path):
    """``run(notebook, marker, answer, graded_id)``: the setup cell, the cell holding ``marker`` (its solution
    region replaced by ``answer``; None keeps the solution), then the graded cell; returns the report folder."""
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    monkeypatch.setenv(REPORT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(NONCE_ENV, NONCE)

    def run_cells(key, marker, answer, graded_id):
        nb = copy.deepcopy(NOTEBOOKS[key])
        if answer is not None:
            substitute(nb, marker, answer)
        cells = [("setup cell", imports_cell(nb).source), (f"cell of {marker}", solution_cell(nb, marker))]
        run_judged_twice(cells, graded_id, GRADED[key][graded_id], tmp_path, NONCE, f"exercise{key}")
        return tmp_path

    return run_cells


def no_point_without_an_answer(key, graded_id, reports):
    """The solution's own report passes its judge; every degenerate variant of it fails."""
    source = GRADED[key][graded_id]
    seen = decode((reports / f"{graded_id}.npz").read_bytes(), nonce=NONCE, cell_id=graded_id)
    given = degenerate.given_inputs(source, graded_id, NONCE)
    assert degenerate.verdict(source, graded_id, NONCE, seen, given) == "passed"
    variants = degenerate.variants(seen, given, np.random.default_rng(0))
    passed = [kind for kind, obs in variants.items() if degenerate.verdict(source, graded_id, NONCE, obs, given) == "passed"]
    assert not passed, f"{graded_id} accepts observations without an answer: {passed}"


# --- exercise 2, task 1: timing-loop --------------------------------------------------------------------

TIMEIT = '''
import timeit
fn()
sync()
def block():
    for _ in range(number):
        fn()
    sync()
return min(timeit.Timer(block, timer=clock).repeat(repeat, 1)) / number
'''
TIMES_IN_A_LIST = '''
fn(); sync()
times = []
for _ in range(repeat):
    t0 = clock()
    for _ in range(number):
        fn()
    sync()
    times.append(clock() - t0)
return float(np.min(times) / number)
'''
NO_SYNC_IN_BLOCKS = '''
fn(); sync()
best = float("inf")
for _ in range(repeat):
    start = clock()
    for _ in range(number):
        fn()
    stop = clock()
    sync()
    best = min(best, (stop - start) / number)
return best
'''
WARM_UP_NOT_SYNCED = TIMES_IN_A_LIST.replace("fn(); sync()", "fn()")
NO_WARM_UP = TIMES_IN_A_LIST.replace("fn(); sync()", "sync()")
MEAN_OF_BLOCKS = TIMES_IN_A_LIST.replace("np.min(times)", "np.mean(times)")
PER_BLOCK = TIMES_IN_A_LIST.replace("np.min(times) / number", "np.min(times)")
WALL_CLOCK = TIMES_IN_A_LIST.replace("clock()", "time.perf_counter()")
# the shortcut: the calls and syncs in order, and the fake device's cost per call returned as a constant
CONSTANT = TIMES_IN_A_LIST.replace("return float(np.min(times) / number)", "return 0.002")


def test_the_solution_harness_passes_and_its_report_needs_an_answer(run):
    reports = run("02", "def best_seconds_per_call", None, "timing-loop")
    no_point_without_an_answer("02", "timing-loop", reports)


@pytest.mark.parametrize("body", [TIMEIT, TIMES_IN_A_LIST], ids=["timeit-with-the-clock", "times-in-a-list"])
def test_other_correct_harnesses_pass(run, body):
    run("02", "def best_seconds_per_call", body, "timing-loop")


@pytest.mark.parametrize("body, match", [
    (NO_SYNC_IN_BLOCKS, "clock was read after call [0-9]+ while its work was still queued"),
    (WARM_UP_NOT_SYNCED, "clock was read after call 1 while its work was still queued"),
    (NO_WARM_UP, "fn was called [0-9]+ times; expected 1 call before the timing"),
    (MEAN_OF_BLOCKS, "more than a call costs"),
    (PER_BLOCK, "more than a call costs"),
    (WALL_CLOCK, "the clock was read 0 times for [0-9]+ timed blocks"),
    (CONSTANT, "on the simulated GPU: 2000.00 µs per call, more than"),
], ids=["no-sync-before-the-clock", "warm-up-not-synced", "no-warm-up", "mean", "per-block", "wall-clock", "constant"])
def test_harnesses_that_do_not_measure_the_work_score_nothing(run, body, match):
    with pytest.raises(AssertionError, match=match):
        run("02", "def best_seconds_per_call", body, "timing-loop")


# --- exercise 3, task 2: keep-borrowed --------------------------------------------------------------------

KEEP = "def keep_results"
DEEP_COPIES = '''
import copy
return [copy.deepcopy(f()) for _ in range(k)]
'''
A_LOOP_THAT_COPIES_EACH_KIND = '''
kept = []
for _ in range(k):
    result = f()
    kept.append(result.copy() if isinstance(result, np.ndarray) else type(result).copy(result))
return kept
'''
HOST_COPIES = "return [host_copy(f()) for _ in range(k)]"           # the task before: values right, all on the host
NO_COPY = "return [f() for _ in range(k)]"
THROUGH_THE_HOST = '''
from coursekit.devices import to_device
results = (f() for _ in range(k))
return [r.copy() if isinstance(r, np.ndarray) else to_device(r.get()) for r in results]
'''
DEVICE_ONLY = "return [r if isinstance(r, np.ndarray) else r.copy() for r in (f() for _ in range(k))]"
ONE_CALL_LATE = '''
f()
return [f().copy() for _ in range(k)]
'''


def test_the_solution_keeps_results_and_its_report_needs_an_answer(run):
    reports = run("03", KEEP, None, "keep-borrowed")
    no_point_without_an_answer("03", "keep-borrowed", reports)


@pytest.mark.parametrize("body", [DEEP_COPIES, A_LOOP_THAT_COPIES_EACH_KIND], ids=["deepcopy", "loop"])
def test_other_ways_to_keep_results_pass(run, body):
    run("03", KEEP, body, "keep-borrowed")


@pytest.mark.parametrize("body, match", [
    (HOST_COPIES, "keep_results returned \\['ndarray'\\]: keep each result where f left it"),
    (NO_COPY, "share their buffer with another result"),
    (THROUGH_THE_HOST, "copied a device array to the host [0-9]+ times"),
    (DEVICE_ONLY, "on the CPU: [0-9]+ of the [0-9]+ kept results share their buffer"),
    (ONE_CALL_LATE, "result 0 of [0-9]+ is not the value of call 0"),
], ids=["host-copies", "no-copy", "through-the-host", "device-only", "one-call-late"])
def test_results_kept_wrongly_or_off_the_device_score_nothing(run, body, match):
    with pytest.raises(AssertionError, match=match):
        run("03", KEEP, body, "keep-borrowed")


# --- exercise 3, task 4: borrow-saves ----------------------------------------------------------------------

SAVES = "def borrow_saves"
GROUPED_BY_SIZE = '''
from collections import Counter
model = costmodel.model(card)
first = list(f())
fresh = Counter(a.size * a.dtype.itemsize for a, b in zip(first, f()) if a is not b)
return float(sum(model.alloc_time(count, nbytes) for nbytes, count in fresh.items()))
'''
THE_LESSONS_FIGURE = "return costmodel.model(card).alloc_time(1, 230_400 * 4)"          # the task before: a constant
EVERY_OUTPUT = "return float(sum(costmodel.model(card).alloc_time(1, a.nbytes) for a in f()))"
ONE_PRICE = '''
first, second = f(), f()
return float(costmodel.model(card).alloc_time(sum(a is not b for a, b in zip(first, second))))
'''
THE_BORROWED_ONES = '''
first, second = f(), f()
return float(sum(costmodel.model(card).alloc_time(1, a.nbytes) for a, b in zip(first, second) if a is b))
'''
WHOLE_CALL = '''
from coursekit.profiling.predict import predict_call
return float(predict_call(f, model=costmodel.model(card)).device)
'''


def test_the_solution_saving_passes_and_its_report_needs_an_answer(run):
    reports = run("03", SAVES, None, "borrow-saves")
    no_point_without_an_answer("03", "borrow-saves", reports)


def test_a_saving_counted_by_size_passes(run):
    run("03", SAVES, GROUPED_BY_SIZE, "borrow-saves")


@pytest.mark.parametrize("body, match", [
    (THE_LESSONS_FIGURE, "µs saved per call, the model gives"),
    (EVERY_OUTPUT, "you predicted [0-9.]+ µs saved per call, the model gives"),
    (ONE_PRICE, "gtx580, .*you predicted"),
    (THE_BORROWED_ONES, "you predicted"),
    (WHOLE_CALL, "you predicted"),
], ids=["the-lessons-figure", "every-output", "one-price-for-every-size", "the-borrowed-ones", "the-whole-call"])
def test_savings_not_counted_from_the_fresh_buffers_score_nothing(run, body, match):
    with pytest.raises(AssertionError, match=match):
        run("03", SAVES, body, "borrow-saves")
