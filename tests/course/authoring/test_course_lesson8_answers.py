"""Exercise 8's graded cells judge what an answer does, not how it is written.

Each graded cell of ``solutions/08_loops_with_scan_solutions.ipynb`` is run here, in this process,
after the notebook's setup cell and one answer: plausible wrong answers (the trace with ``h0`` in it,
``dot(U, h)``, a loop run backwards; one-sided differences, a bump never undone; an op whose
gradient is not turned round, leaks at the wrong term, or is no loop; a loop without ``until``, a stop test turned round, a
full-length loop cut afterwards) must fail, and correct answers written differently from the solution
must pass. Each answer is judged twice, as in a grading run: by the cell itself (what the student sees
in JupyterLab) and by the grader's judge (:func:`coursekit.course.grading.judge.judge_cells`), which runs the
cell's source again in a namespace holding nothing of the notebook, on the observations the probe
wrote to the run's report folder; the two must agree. (tests/course/authoring/test_course_notebooks.py proves that
the cells pass on the solution and fail on the unsolved exercise.)
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from course_cells import imports_cell
import pytest
from judged_twice import run_judged_twice, solution_cell

from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV
from coursekit.course.authoring.graded import graded_cells

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = nbformat.read(ROOT / "solutions" / "08_loops_with_scan_solutions.ipynb", as_version=4)
SETUP = imports_cell(NOTEBOOK).source
GRADED = {cell.id: cell.source for cell in graded_cells(NOTEBOOK)}
NONCE = "lesson8-test-run"        # a grading run's nonce: the inputs come from it and the cell id


RNN = solution_cell(NOTEBOOK, "def rnn_states") + "\n\n"


@pytest.fixture
def run(monkeypatch, tmp_path):
    """``run(answer, graded_id)``: the setup cell, then ``answer``, then the graded cell, in one namespace,
    as a grading run's kernel would; then the grader's judge on what the cell reported.

    Raises what the cell raised in the kernel (AssertionError for a wrong answer). When the cell
    passed there, the judge must pass too; when it failed, the judge must not give the points.
    """
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    monkeypatch.setenv(REPORT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(NONCE_ENV, NONCE)

    def run_cells(answer, graded_id):
        run_judged_twice([("setup cell", SETUP), ("answer cell", answer)], graded_id, GRADED[graded_id],
                         tmp_path, NONCE, "exercise8")

    return run_cells


def test_the_notebook_has_the_four_graded_cells_these_tests_drive():
    assert set(GRADED) == {"rnn-scan", "numeric-gradient", "leaky-sum-op", "generate-until"}


# --- task 1: the RNN with scan ---------------------------------------------------------------------

STATES = '''
def rnn_states(x, h0, W, U, b):
    def step(x_t, h_prev, W, U, b):
        return T.tanh({new_state})

    states, _ = theano.scan(step, sequences=x, outputs_info=h0, non_sequences=[W, U, b]{options})
    return {result}
'''
GOOD_STATES = dict(new_state="T.dot(x_t, W) + T.dot(h_prev, U) + b", options="", result="states")


def states_answer(**changes):
    return STATES.format(**{**GOOD_STATES, **changes})


def test_the_solution_rnn_passes(run):
    run(RNN, "rnn-scan")


@pytest.mark.parametrize("answer", [
    states_answer(result="T.concatenate([h0.dimshuffle('x', 0), states])"),   # the trace with h0 in front
    states_answer(result="states[-1]"),                                          # the last state only
    states_answer(new_state="T.dot(x_t, W) + T.dot(U, h_prev) + b"),            # dot(U, h): U transposed
    states_answer(new_state="T.dot(x_t, W) + T.dot(h_prev, U)"),                # no bias
    states_answer(options=", go_backwards=True"),                               # the sequence read backwards
], ids=["h0-in-trace", "last-state-only", "U-transposed", "no-bias", "backwards"])
def test_wrong_rnns_fail(run, answer):
    with pytest.raises(AssertionError):
        run(answer, "rnn-scan")


@pytest.mark.parametrize("answer", [
    '''
def rnn_states(x, h0, W, U, b):
    # the input products for every step as one matrix product before the loop; the weights captured
    driven = T.dot(x, W) + b
    states, _ = theano.scan(lambda d_t, h: T.tanh(d_t + T.dot(h, U)), sequences=driven,
                            outputs_info=dict(initial=h0, taps=[-1]))
    return states
''', '''
def rnn_states(x, h0, W, U, b):
    # the sequence as a dict with tap 0, the state passed with its tap written out, strict scan
    def step(x_now, h_before, U_, W_, b_):
        return T.tanh(b_ + T.dot(h_before, U_) + T.dot(x_now, W_))

    result, updates = theano.scan(fn=step, sequences=[dict(input=x, taps=[0])], outputs_info=[h0],
                                  non_sequences=[U, W, b], strict=True)
    return result
'''], ids=["pushed-out-product", "taps-written-out"])
def test_differently_written_rnns_pass(run, answer):
    run(answer, "rnn-scan")


# --- task 2: central differences -------------------------------------------------------------------

def test_the_solution_differences_pass(run):
    run(solution_cell(NOTEBOOK, "def numeric_gradient"), "numeric-gradient")


@pytest.mark.parametrize("answer", ['''
def numeric_gradient(f, value, eps=1e-6):
    gradient, base = np.zeros(value.shape), f(value)          # one-sided differences
    for i in np.ndindex(value.shape):
        bumped = value.astype(float)
        bumped[i] += eps
        gradient[i] = (f(bumped) - base) / eps
    return gradient
''', '''
def numeric_gradient(f, value, eps=1e-6):
    gradient = np.zeros(value.shape)                          # divided by eps, not 2 eps
    for i in np.ndindex(value.shape):
        up, down = value.astype(float), value.astype(float)
        up[i] += eps
        down[i] -= eps
        gradient[i] = (f(up) - f(down)) / eps
    return gradient
''', '''
def numeric_gradient(f, value, eps=1e-6):
    gradient = np.zeros(value.shape)                          # bumps the caller's array and never undoes it
    for i in np.ndindex(value.shape):
        value[i] += eps
        up = f(value)
        value[i] -= 2 * eps
        gradient[i] = (up - f(value)) / (2 * eps)
    return gradient
''', '''
def numeric_gradient(f, value, eps=1e-6):
    flat = value.astype(float).ravel()                        # right numbers, flat shape
    gradient = np.zeros(flat.size)
    for k in range(flat.size):
        step = np.zeros(flat.size)
        step[k] = eps
        gradient[k] = (f((flat + step).reshape(value.shape)) - f((flat - step).reshape(value.shape))) / (2 * eps)
    return gradient
'''], ids=["one-sided", "divided-by-eps", "bump-not-undone", "flat-result"])
def test_wrong_differences_fail(run, answer):
    with pytest.raises(AssertionError):
        run(answer, "numeric-gradient")


def test_differences_that_bump_in_place_and_put_back_pass(run):
    run('''
def numeric_gradient(f, value, eps=1e-6):
    gradient = np.empty_like(value, dtype=float)
    for i in np.ndindex(*value.shape):
        kept = value[i]
        value[i] = kept + eps
        up = f(value)
        value[i] = kept - eps
        down = f(value)
        value[i] = kept
        gradient[i] = 0.5 * (up - down) / eps
    return gradient
''', "numeric-gradient")


# --- task 3: a loop op with its gradient written as a loop ------------------------------------------

LEAKY = solution_cell(NOTEBOOK, "class LeakySum")


def leaky(old, new):
    assert old in LEAKY, old
    return LEAKY.replace(old, new)


def test_the_solution_op_passes(run):
    run(LEAKY, "leaky-sum-op")


@pytest.mark.parametrize("answer", [
    leaky("return [backwards[::-1]]", "return [backwards]"),                                  # not turned round
    leaky("g_t + self.a * s_next", "self.a * g_t + s_next"),                                  # the leak on the wrong term
    leaky("g_t + self.a * s_next", "g_t + s_next"),                                           # the leak forgotten
    leaky("go_backwards=True)", "go_backwards=False)"),                                       # run forwards
    leaky("            y[t] = total\n", "            y[t] = total - x[t]\n"),                # the output one step late
    leaky("""        backwards, _ = theano.scan(lambda g_t, s_next: g_t + self.a * s_next, sequences=g,
                                   outputs_info=T.zeros_like(g[0]), go_backwards=True)
        return [backwards[::-1]]""", """        return [g]"""),                                               # as if a were 0
], ids=["not-reversed", "leak-misplaced", "leak-forgotten", "forwards", "late-output", "local-only"])
def test_wrong_ops_fail(run, answer):
    with pytest.raises(AssertionError):
        run(answer, "leaky-sum-op")


def test_a_gradient_that_is_no_loop_fails_with_its_reason(run):
    # a correct gradient, but written as a matrix product: the task asks for the loop, and says so
    with pytest.raises(AssertionError, match="write the gradient with scan"):
        run(leaky("""        backwards, _ = theano.scan(lambda g_t, s_next: g_t + self.a * s_next, sequences=g,
                                   outputs_info=T.zeros_like(g[0]), go_backwards=True)
        return [backwards[::-1]]""", """        n = g.shape[0]
        steps = T.arange(n)
        gaps = steps.dimshuffle("x", 0) - steps.dimshuffle(0, "x")
        a = T.constant(np.asarray(self.a, dtype=g.dtype))
        leak = T.switch(T.ge(gaps, 0), a ** T.cast(T.maximum(gaps, 0), g.dtype), 0)
        return [T.dot(leak, g)]"""), "leaky-sum-op")


def test_a_differently_written_op_passes(run):
    """The forward loop over a Python list, the gradient as a scan over the reversed g run forwards."""
    run(leaky("""        y = np.empty_like(x)
        total = x.dtype.type(0)
        for t in range(x.shape[0]):
            total = x.dtype.type(self.a) * total + x[t]
            y[t] = total
        output_storage[0][0] = y""", """        values, total = [], 0.0
        for value in x.tolist():
            total = self.a * total + value
            values.append(total)
        output_storage[0][0] = np.asarray(values, dtype=x.dtype).reshape(x.shape)""").replace(
        """        backwards, _ = theano.scan(lambda g_t, s_next: g_t + self.a * s_next, sequences=g,
                                   outputs_info=T.zeros_like(g[0]), go_backwards=True)
        return [backwards[::-1]]""", """        reversed_sums, _ = theano.scan(lambda g_t, s: self.a * s + g_t, sequences=[g[::-1]],
                                       outputs_info=[T.zeros_like(g[0])])
        return [reversed_sums[::-1]]"""), "leaky-sum-op")


# --- task 4: the generating loop --------------------------------------------------------------------

GENERATE = '''
def generate(x0, W, b, tol, max_steps):
    def step(x_prev, W, b, tol):
        x_now = T.tanh(T.dot(x_prev, W) + b)
        return {returned}

    rows, _ = theano.scan(step, outputs_info=x0, non_sequences=[W, b, tol], n_steps=max_steps)
    return rows
'''


def test_the_solution_generator_passes(run):
    run(solution_cell(NOTEBOOK, "def generate"), "generate-until")


@pytest.mark.parametrize("answer", [
    GENERATE.format(returned="x_now"),                                                       # never stops
    GENERATE.format(returned="x_now, until(T.max(abs(x_now - x_prev)) > tol)"),             # test turned round
    GENERATE.format(returned="x_now, until(T.sqrt(T.sum((x_now - x_prev) ** 2)) < tol)"),   # another distance
    '''
def generate(x0, W, b, tol, max_steps):
    # every step run, then the rows after the stop cut off: the right rows, but the loop never stopped
    full, _ = theano.scan(lambda x_prev: T.tanh(T.dot(x_prev, W) + b), outputs_info=x0, n_steps=max_steps)
    previous = T.concatenate([x0.dimshuffle('x', 0), full[:-1]])
    below = T.lt(T.max(abs(full - previous), axis=1), tol)
    end = T.switch(T.gt(T.sum(below), 0), T.argmax(below) + 1, max_steps)
    return full[:end]
'''], ids=["no-until", "until-inverted", "euclidean-change", "cut-afterwards"])
def test_wrong_generators_fail(run, answer):
    with pytest.raises(AssertionError):
        run(answer, "generate-until")


def test_a_differently_written_generator_passes(run):
    """tol captured instead of passed, the state as a dict with its tap, the test written with T.lt."""
    run('''
def generate(x0, W, b, tol, max_steps):
    def step(previous):
        current = T.tanh(b + T.dot(previous, W))
        return [current], until(T.lt(abs(current - previous).max(), tol))

    out, _ = theano.scan(step, outputs_info=[dict(initial=x0, taps=[-1])], n_steps=max_steps)
    return out
''', "generate-until")
