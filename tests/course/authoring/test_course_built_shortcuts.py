"""Exercises 1 and 7: the shortcuts score 0, wrong answers lose the points, other correct answers keep them.

Issue 25 found three graded cells that passed without the work: ``symbolic-gradient`` with a plain
NumPy lambda, ``stable-log-sigmoid`` with a literal ``fired=["log_sigmoid"]`` (the cell now grades a
rewrite the student writes, by the compiled graph it leaves with the library's own rule switched off),
and ``op-multiply`` with an empty kernel launched once and the product computed on the host (the cell
now checks that a launch of the op's kernel wrote the product into one of its arguments). Each answer
runs in this process after the notebook's setup cell and is judged twice, as in a grading run
(``judged_twice``).
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from answers import substitute
from course_cells import imports_cell
from judged_twice import run_judged_twice, solution_cell

from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV
from coursekit.course.authoring.graded import graded_cells
from coursekit.rewriting import registered, remove_rewrite

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = {k: nbformat.read(next((ROOT / "solutions").glob(f"{k}_*.ipynb")), as_version=4) for k in ("01", "07")}
GRADED = {k: {c.id: c.source for c in graded_cells(nb)} for k, nb in NOTEBOOKS.items()}
NONCE = "built-shortcuts-test-run"


@pytest.fixture
def run(monkeypatch, tmp_path):
    """``run(notebook, [(marker, anchor, answer)], graded_id)``: the setup cell, the cells holding each marker
    (with ``answer`` put in the solution region after ``anchor``; None keeps the solution), then the graded cell."""
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    monkeypatch.setenv(REPORT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(NONCE_ENV, NONCE)
    before = {rw.name for rw in registered()}

    def run_cells(key, answers, graded_id):
        nb = copy.deepcopy(NOTEBOOKS[key])
        for _, anchor, answer in answers:
            if answer is not None:
                substitute(nb, anchor, answer)
        markers = list(dict.fromkeys(marker for marker, _, _ in answers))
        cells = [("setup cell", imports_cell(nb).source)] + [(f"cell of {m}", solution_cell(nb, m)) for m in markers]
        run_judged_twice(cells, graded_id, GRADED[key][graded_id], tmp_path, NONCE, f"exercise{key}")

    yield run_cells
    for rw in registered():
        if rw.name not in before:
            remove_rewrite(rw.name)


# --- exercise 1, task 2a: symbolic-gradient ----------------------------------------------------------

def gradient(answer):
    return [("def make_gradient_function", "def make_gradient_function", answer)]


NUMPY_LAMBDA = '''
def g(X, y, w):
    t = np.tanh(X @ w)
    return X.T @ (2 * (t - y) * (1 - t ** 2))
return g
'''


def test_the_solution_gradient_passes(run):
    run("01", gradient(None), "symbolic-gradient")


def test_a_gradient_compiled_from_tensor_grad_with_a_list_passes(run):
    run("01", gradient("(gw,) = T.grad(cost, [w])\nreturn theano.function([X, y, w], gw)"), "symbolic-gradient")


@pytest.mark.parametrize("answer, match", [
    (NUMPY_LAMBDA, "not a compiled coursekit function"),                                  # the shortcut
    ("return lambda X_, y_, w_: theano.function([X, y, w], theano.grad(cost, w))(X_, y_, w_)",
     "not a compiled coursekit function"),
    ("return theano.function([X, y, w], theano.grad(-cost, w))", "differs from finite differences"),
    ("return theano.function([X, y, w], theano.grad(T.sum(T.tanh(T.dot(X, w)) - y) ** 2, w))",
     "differs from finite differences"),
], ids=["numpy-lambda", "lambda-around-function", "sign", "square-outside-sum"])
def test_shortcuts_and_wrong_gradients_score_nothing(run, answer, match):
    with pytest.raises(AssertionError, match=match):
        run("01", gradient(answer), "symbolic-gradient")


# --- exercise 1, task 2b: gradient-by-hand -------------------------------------------------------------

def by_hand(answer):
    return [("def gradient_by_hand", "def gradient_by_hand", answer)]


@pytest.mark.parametrize("answer, match", [
    ("t = np.tanh(X @ w)\nreturn X.T @ (2 * (t - y))", "differs from finite differences"),          # no tanh'
    ("t = np.tanh(X @ w)\nreturn X.T @ (2 * (y - t) * (1 - t ** 2))", "differs from finite differences"),
    ("t = np.tanh(X @ w)\nreturn (2 * (t - y) * (1 - t ** 2)).sum() * np.ones_like(w)", "differs from finite"),
], ids=["no-tanh-derivative", "sign", "summed"])
def test_wrong_hand_gradients_fail(run, answer, match):
    with pytest.raises(AssertionError, match=match):
        run("01", by_hand(answer), "gradient-by-hand")


def test_a_hand_gradient_written_with_einsum_passes(run):
    run("01", by_hand("t = np.tanh(np.einsum('ij,j->i', X, w))\n"
                      "return np.einsum('ij,i->j', X, 2 * (t - y) / np.cosh(X @ w) ** 2)"), "gradient-by-hand")


# --- exercise 1, task 4: stable-log-sigmoid (a rewrite of the student's own) ---------------------------

RULE = '''
if elemwise_name(node) != "log":
    return None
inner = producer(node.inputs[0], "sigmoid")
if inner is None:
    return None
x = inner.inputs[0]
return [{replacement}]
'''


def rule(replacement="-T.softplus(-x)", body=RULE):
    return [("def stable_log_sigmoid", "def stable_log_sigmoid", body.format(replacement=replacement))]


def test_the_solution_rule_passes(run):
    run("01", rule(), "stable-log-sigmoid")


@pytest.mark.parametrize("replacement", ["T.minimum(x, 0) - T.log1p(T.exp(-abs(x)))",
                                         "-T.log1p(T.exp(-x))"])      # the library's log1p(exp) rule finishes it
def test_other_correct_rules_pass(run, replacement):
    run("01", rule(replacement), "stable-log-sigmoid")


@pytest.mark.parametrize("answer, match", [
    (rule(body="return None"), "is not finite at z"),                          # no rule: what the shortcut did
    (rule("T.minimum(x, 0)"), r"log\(sigmoid\(z\)\) at z = "),                # right only far from 0
    (rule("T.softplus(-x)"), r"log\(sigmoid\(z\)\) at z = .* expected"),       # sign
    (rule(body='return [-T.softplus(-node.inputs[0])] if elemwise_name(node) == "log" else None'),
     r"log\(sigmoid\(z\)\) at z = "),                                           # every log, the wrong input
    (rule(body='''if elemwise_name(node) != "log" or node.inputs[0].owner is None:
    return None
return [-T.softplus(-node.inputs[0].owner.inputs[0])]'''),
     "must leave other logs alone"),                                            # any log of anything
], ids=["no-rule", "asymptote", "sign", "every-log", "log-of-anything"])
def test_rules_that_do_not_stabilise_or_rewrite_too_much_fail(run, answer, match):
    with pytest.raises(AssertionError, match=match):
        run("01", answer, "stable-log-sigmoid")


# --- exercise 7, task 2: op-multiply ---------------------------------------------------------------------

EMPTY_KERNEL = '''
MULTIPLY_SOURCE = r"""
__global__ void multiply_elements(float *out, const float *x, const float *y, int n) { }
"""
'''
HOST_PRODUCT_AFTER_EMPTY_LAUNCH = '''
kernel = cuda.SourceModule(kernel_source("MULTIPLY_SOURCE")).get_function("multiply_elements")
out = cuda.empty(x.shape, x.dtype)
kernel((1,), (1,), (out, x, y, np.int32(0)))
output_storage[0][0] = cuda.to_device(x.get() * y.get())
'''
ADD_KERNEL = '''
MULTIPLY_SOURCE = r"""
__global__ void multiply_elements(float *out, const float *x, const float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""
'''
GRID_STRIDE = '''
MULTIPLY_SOURCE = r"""
__global__ void multiply_elements(float *out, const float *x, const float *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = x[i] * y[i];
}
"""
'''
FEW_BLOCKS = '''
if x.shape != y.shape:
    raise ValueError("shapes differ")
kernel = cuda.SourceModule(kernel_source("MULTIPLY_SOURCE")).get_function("multiply_elements")
out = cuda.empty(x.shape, x.dtype)
kernel((4,), (128,), (out, x, y, np.int32(x.size)))
output_storage[0][0] = out
'''


def multiply(source=None, gpu_perform=None, perform=None):
    return [("MULTIPLY_SOURCE = r", "MULTIPLY_SOURCE = r", source),
            ("class MultiplyOp", "def perform(", perform), ("class MultiplyOp", "def gpu_perform(", gpu_perform)]


KERNEL_THEN_HOST_PRODUCT = '''
kernel = cuda.SourceModule(kernel_source("MULTIPLY_SOURCE")).get_function("multiply_elements")
out = cuda.empty(x.shape, x.dtype)
kernel(((x.size + 255) // 256,), (256,), (out, x, y, np.int32(x.size)))
output_storage[0][0] = cuda.to_device(x.get() * y.get())
'''


def test_the_solution_op_passes(run):
    run("07", multiply(), "op-multiply")


def test_a_grid_stride_kernel_on_a_fixed_grid_passes(run):
    run("07", multiply(GRID_STRIDE, FEW_BLOCKS), "op-multiply")


@pytest.mark.parametrize("answers, match", [
    (multiply(EMPTY_KERNEL, HOST_PRODUCT_AFTER_EMPTY_LAUNCH), "no launch wrote x \\* y"),    # the shortcut
    (multiply(None, HOST_PRODUCT_AFTER_EMPTY_LAUNCH), "no launch wrote x \\* y"),           # a kernel, not used
    (multiply(None, KERNEL_THEN_HOST_PRODUCT), "not the array its kernel wrote"),           # kernel result unused
    (multiply(ADD_KERNEL, perform="output_storage[0][0] = x + y"), "MultiplyOp gives wrong values"),
], ids=["empty-kernel-host-product", "launch-of-nothing", "kernel-result-unused", "adds"])
def test_shortcuts_and_wrong_ops_score_nothing(run, answers, match):
    with pytest.raises(AssertionError, match=match):
        run("07", answers, "op-multiply")
