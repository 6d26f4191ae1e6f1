"""Exercise 10's graded cells judge properties of an answer, never its exact numbers.

Each graded cell of ``solutions/10_afternoon_project_solutions.ipynb`` is run here, in this process,
after the notebook's setup cell, the solution of the other tasks and one student's answer: plausible
wrong answers (Glorot with one fan or the wrong bound, a draw that ignores ``rng``, ±1/sqrt(fan_in),
an orthogonal matrix without QR's sign fix, reshaped, scaled or merely normalised; a training step on
float64 data, one around get_value/set_value, one given the data at each call, one that returns the
loss; a loss computed on the host or only once; a summed loss, forgotten biases) must fail with the judge's
message, and correct answers written differently (a normal Glorot, orthogonal by SVD or by QR of the
other shape, log_softmax, another way of seeding the layers) must pass, on several grading runs'
inputs. Each answer is judged twice, as in a grading run: by the cell in the kernel (what the
student sees in JupyterLab) and by the grader's judge (:func:`coursekit.course.grading.judge.judge_cells`),
which runs the cell's source again in a namespace holding nothing of the notebook, on the
observations the probe reported; the two must agree. (tests/course/authoring/test_course_notebooks.py proves that the
cells pass on the solution and fail on the unsolved exercise.)
"""
from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import nbformat
from course_cells import imports_cell
import pytest
from judged_twice import run_judged_twice

from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV
from coursekit.course.authoring.exercises import find_regions
from coursekit.course.authoring.graded import graded_cells

NOTEBOOK = nbformat.read(Path(__file__).resolve().parents[3] / "solutions" / "10_afternoon_project_solutions.ipynb",
                         as_version=4)
GRADED = {cell.id: cell.source for cell in graded_cells(NOTEBOOK)}
SETUP = imports_cell(NOTEBOOK).source

# --- the solution's functions, taken from the notebook (so the tests follow it) ---------------------
SOLUTIONS = {}
for cell in NOTEBOOK.cells:
    if cell.cell_type == "code" and find_regions(cell.source, where="solution"):
        name = cell.source.split("def ", 1)[1].split("(", 1)[0]
        SOLUTIONS[name] = cell.source

# --- wrong answers a student could plausibly write ----------------------------------------------------
GLOROT_FAN_IN_ONLY = '''
def glorot(fan_in, fan_out, rng):
    bound = np.sqrt(6.0 / fan_in)            # forgets fan_out
    return rng.uniform(-bound, bound, (fan_in, fan_out)).astype("float32")
'''
GLOROT_HALF_RANGE = '''
def glorot(fan_in, fan_out, rng):
    bound = np.sqrt(2.0 / (fan_in + fan_out))  # the variance's square root taken as the uniform bound
    return rng.uniform(-bound, bound, (fan_in, fan_out)).astype("float32")
'''
GLOROT_GLOBAL_RNG = '''
def glorot(fan_in, fan_out, rng):
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return np.random.uniform(-bound, bound, (fan_in, fan_out)).astype("float32")   # ignores rng
'''
GLOROT_NORMAL = '''
def glorot(fan_in, fan_out, rng):
    return (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / (fan_in + fan_out))).astype("float32")
'''
FAN_IN_SQRT = '''
def fan_in_uniform(fan_in, fan_out, rng):
    return rng.uniform(-1 / np.sqrt(fan_in), 1 / np.sqrt(fan_in), (fan_in, fan_out)).astype("float32")
'''
FAN_OUT = '''
def fan_in_uniform(fan_in, fan_out, rng):
    return rng.uniform(-1.0 / fan_out, 1.0 / fan_out, (fan_in, fan_out)).astype("float32")
'''
QR_WITHOUT_SIGN_FIX = '''
def orthogonal(fan_in, fan_out, rng):
    q, _ = np.linalg.qr(rng.standard_normal((max(fan_in, fan_out), min(fan_in, fan_out))))
    return (q if fan_in >= fan_out else q.T).astype("float32")
'''
ORTHOGONAL_WRONG_DIRECTION = '''
def orthogonal(fan_in, fan_out, rng):
    q, r = np.linalg.qr(rng.standard_normal((max(fan_in, fan_out), min(fan_in, fan_out))))
    q *= np.sign(np.diag(r))
    return q.reshape(fan_in, fan_out).astype("float32")     # reshaped, not transposed, when fan_in < fan_out
'''
NORMALISED_COLUMNS = '''
def orthogonal(fan_in, fan_out, rng):
    w = rng.standard_normal((fan_in, fan_out))
    return (w / np.linalg.norm(w, axis=0)).astype("float32")   # unit columns, but not orthogonal
'''
ORTHOGONAL_BY_SVD = '''
def orthogonal(fan_in, fan_out, rng):
    u, _, vt = np.linalg.svd(rng.standard_normal((fan_in, fan_out)), full_matrices=False)
    return (u @ vt).astype("float32")
'''
_STEP_START = '''
def make_mlp_step(X, labels, hidden, activation, init, learning_rate=0.1, seed=0):
    rng = np.random.default_rng(seed)
    n, classes = X.shape[0], int(labels.max()) + 1
    x = theano.shared(np.asarray(X, dtype=DTYPE), name="x")
    t = theano.shared(np.eye(classes, dtype=DTYPE)[labels], name="t")
    sizes = [X.shape[1], *hidden, classes]
    params, h = [], x
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        W = theano.shared(np.asarray(init(fan_in, fan_out, rng), dtype=DTYPE), name=f"W{i}")
        b = theano.shared(np.zeros(fan_out, dtype=DTYPE), name=f"b{i}")
        params += [W, b]
        z = T.dot(h, W) + b
        h = activation(z) if i < len(sizes) - 2 else z
'''
STEP_FLOAT64 = 'DTYPE = "float64"   # the data as load_digits gives it: the step silently stays on the CPU\n' + \
    _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() / n
    grads = T.grad(cost, params)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    return step, theano.function([], cost), params
'''
STEP_ON_THE_HOST = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() * np.float32(1.0 / n)
    gradients = theano.function([], T.grad(cost, params))

    def step():          # every call downloads the gradients and uploads the new values
        for p, g in zip(params, gradients()):
            p.set_value(p.get_value() - learning_rate * g)

    return step, theano.function([], cost), params
'''
STEP_WITH_MEAN_AND_RETURNED_LOSS = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum(axis=1).mean()
    grads = T.grad(cost, params)
    step = theano.function([], cost, updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    return step, theano.function([], cost), params
'''
STEP_SUM_NOT_MEAN = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum()          # the sum: a learning rate N times too large
    grads = T.grad(cost, params)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    return step, theano.function([], cost * np.float32(1.0 / n)), params
'''
STEP_FORGETS_BIASES = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() * np.float32(1.0 / n)
    weights = params[0::2]
    grads = T.grad(cost, weights)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(weights, grads)])
    return step, theano.function([], cost), params
'''
STEP_WITH_LOG_SOFTMAX = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.nnet.log_softmax(h)).sum() * np.float32(1.0 / n)
    grads = T.grad(cost, params)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    return step, theano.function([], cost), params
'''


ORTHOGONAL_SCALED = '''
def orthogonal(fan_in, fan_out, rng):
    q, r = np.linalg.qr(rng.standard_normal((max(fan_in, fan_out), min(fan_in, fan_out))))
    q *= np.sign(np.diag(r)) * np.sqrt(2.0)                  # a gain: singular values sqrt(2), not 1
    return (q if fan_in >= fan_out else q.T).astype("float32")
'''
ORTHOGONAL_QR_OF_THE_OTHER_SHAPE = '''
def orthogonal(fan_in, fan_out, rng):
    a = rng.standard_normal((fan_in, fan_out))
    if fan_in < fan_out:
        q, r = np.linalg.qr(a.T)
        return (q @ np.diag(np.sign(np.diag(r)))).T.astype(np.float32)
    q, r = np.linalg.qr(a)
    return (q @ np.diag(np.sign(np.diag(r)))).astype(np.float32)
'''
GLOROT_FROM_RANDOM = '''
def glorot(fan_in, fan_out, rng):
    return ((2 * rng.random((fan_in, fan_out)) - 1) * (6 / (fan_in + fan_out)) ** 0.5).astype(np.float32)
'''
LOSS_ON_THE_HOST = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() * np.float32(1.0 / n)
    grads = T.grad(cost, params)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    onehot, data = np.eye(classes)[labels], np.asarray(X, dtype=np.float64)

    def loss():          # downloads every parameter at each call
        a = data
        for i in range(0, len(params), 2):
            a = a @ params[i].get_value() + params[i + 1].get_value()
            a = np.tanh(a) if i < len(params) - 2 else a
        a = a - a.max(axis=1, keepdims=True)
        return float(-(onehot * (a - np.log(np.exp(a).sum(axis=1, keepdims=True)))).sum() / n)

    return step, loss, params
'''
STEP_GIVEN_THE_DATA = 'DTYPE = "float32"\n' + _STEP_START.replace(
    'x = theano.shared(np.asarray(X, dtype=DTYPE), name="x")', 'x = T.fmatrix("x")') + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() * np.float32(1.0 / n)
    grads = T.grad(cost, params)
    train = theano.function([x], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    data = np.asarray(X, dtype=DTYPE)
    return (lambda: train(data)), (lambda: theano.function([x], cost)(data)), params   # uploads X every step
'''
STEP_SEEDED_PER_LAYER = 'DTYPE = "float32"\n' + _STEP_START.replace(
    "init(fan_in, fan_out, rng)", "init(fan_in, fan_out, np.random.default_rng([seed, 17, i]))") + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() / np.float32(n)
    grads = T.grad(cost, params)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    return step, theano.function([], cost), params
'''
LOSS_COMPUTED_ONCE = 'DTYPE = "float32"\n' + _STEP_START + '''
    cost = -(t * T.log(T.nnet.softmax(h))).sum() * np.float32(1.0 / n)
    grads = T.grad(cost, params)
    step = theano.function([], [], updates=[(p, p - learning_rate * g) for p, g in zip(params, grads)])
    first = float(theano.function([], cost)())
    return step, (lambda: first), params             # the loss at the start, whatever the steps did
'''


NONCES = ["lesson10-run-1", "lesson10-run-2", "lesson10-run-3"]     # three grading runs: new inputs each


@pytest.fixture
def run(monkeypatch, tmp_path):
    """``run(answer, graded_id, nonce)``: setup, the other tasks solved, ``answer``, the graded cell, in one
    namespace as a grading run's kernel would; then the grader's judge on what the cell reported.

    Raises what the cell raised in the kernel (AssertionError for a wrong answer). When the cell
    passed there, the judge must pass too; when it failed, the judge must fail with the same message.
    """
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    monkeypatch.setenv(REPORT_DIR_ENV, str(tmp_path))

    def run_cells(answer, graded_id, nonce=NONCES[0]):
        monkeypatch.setenv(NONCE_ENV, nonce)
        cells = [("setup cell", SETUP)] + [("solution cell", source) for source in SOLUTIONS.values()]
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            run_judged_twice(cells + [("answer cell", answer)], graded_id, GRADED[graded_id], tmp_path, nonce,
                             "exercise10")

    return run_cells


def test_the_solution_defines_every_function_the_graded_cells_call():
    assert set(SOLUTIONS) == {"glorot", "fan_in_uniform", "orthogonal", "make_mlp_step"}
    assert set(GRADED) == {"glorot", "fan-in-uniform", "orthogonal", "step-on-device", "step-trains"}


WRONG = [
    ("glorot", GLOROT_FAN_IN_ONLY, "variance"),
    ("glorot", GLOROT_HALF_RANGE, "variance"),
    ("glorot", GLOROT_GLOBAL_RNG, "same rng seed"),
    ("fan-in-uniform", FAN_IN_SQRT, "beyond 1/fan_in"),
    ("fan-in-uniform", FAN_OUT, "fan_in_uniform"),
    ("orthogonal", QR_WITHOUT_SIGN_FIX, "fix the signs"),
    ("orthogonal", ORTHOGONAL_WRONG_DIRECTION, "identity"),
    ("orthogonal", NORMALISED_COLUMNS, "identity"),
    ("orthogonal", ORTHOGONAL_SCALED, "singular values"),
    ("step-on-device", STEP_FLOAT64, "run on the CPU"),
    ("step-on-device", STEP_ON_THE_HOST, "not a compiled coursekit function"),
    ("step-on-device", STEP_GIVEN_THE_DATA, "passes the data in at each call"),
    ("step-on-device", STEP_WITH_MEAN_AND_RETURNED_LOSS, "transfer ops"),
    ("step-on-device", LOSS_ON_THE_HOST, "loss is a builtins.function"),
    ("step-trains", STEP_SUM_NOT_MEAN, "gradient-descent update"),
    ("step-trains", STEP_FORGETS_BIASES, "b"),
    ("step-trains", LOSS_COMPUTED_ONCE, "did not go down"),
]


@pytest.mark.parametrize("cell_id, wrong, message", WRONG,
                         ids=[f"{cell}-{i}" for i, (cell, _, _) in enumerate(WRONG)])
def test_a_plausible_wrong_answer_fails_its_graded_cell(run, cell_id, wrong, message):
    with pytest.raises(AssertionError, match=message):
        run(wrong, cell_id)


@pytest.mark.parametrize("nonce", NONCES)
@pytest.mark.parametrize("cell_id", sorted(GRADED))
def test_the_solution_passes_on_every_runs_inputs(run, cell_id, nonce):
    run("", cell_id, nonce)


@pytest.mark.parametrize("cell_id, valid", [
    ("glorot", GLOROT_NORMAL),
    ("glorot", GLOROT_FROM_RANDOM),
    ("orthogonal", ORTHOGONAL_BY_SVD),
    ("orthogonal", ORTHOGONAL_QR_OF_THE_OTHER_SHAPE),
    ("step-on-device", STEP_WITH_LOG_SOFTMAX),
    ("step-trains", STEP_WITH_LOG_SOFTMAX),
    ("step-on-device", STEP_SEEDED_PER_LAYER),
    ("step-trains", STEP_SEEDED_PER_LAYER),
], ids=["glorot-normal", "glorot-from-random", "orthogonal-svd", "orthogonal-qr-other-shape",
        "log-softmax-on-device", "log-softmax-trains", "seeded-per-layer-on-device", "seeded-per-layer-trains"])
@pytest.mark.parametrize("nonce", NONCES[:2])
def test_a_valid_alternative_passes(run, cell_id, valid, nonce):
    run(valid, cell_id, nonce)
