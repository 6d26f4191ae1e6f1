"""Exercise 9's graded cells judge what an answer does, not how it is written.

Each graded cell of ``solutions/09_inside_the_compiler_solutions.ipynb`` is run here, in this
process, after the notebook's setup cell and one answer: plausible wrong answers (a rewrite that
changes values, one that never fires, one that rewrites too much; a gradient with a sign error or
without the chain rule, a value that overflows; a tiled kernel without the barrier, with an
off-by-one at the edge, that drops the last partial tile, without tiles at all, or that fills the
tiles and then reads A and B from global memory in its loop anyway) must fail, and
correct answers written differently from the solution must pass.  Each answer is judged twice, as
in a grading run: by the cell itself (what the student sees in JupyterLab) and by the grader's judge
(:func:`coursekit.course.grading.judge.judge_cells`), which runs the cell's source again in a namespace that
holds nothing of the notebook, on the observations the probe wrote to the run's report folder; the two
must agree.  (tests/course/authoring/test_course_notebooks.py proves that the cells pass on the solution and fail on the unsolved exercise; the solution's kernel is
not run again here, because every kernel source costs two compilations, one with AddressSanitizer.)

Rules an answer registers are removed after each test, so nothing leaks into other tests.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from course_cells import imports_cell
import pytest
from judged_twice import run_judged_twice, solution_cell

from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV
from coursekit.course.authoring.graded import graded_cells
from coursekit.rewriting import RewriteError, registered, remove_rewrite

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = nbformat.read(ROOT / "solutions" / "09_inside_the_compiler_solutions.ipynb", as_version=4)
SETUP = imports_cell(NOTEBOOK).source
GRADED = {cell.id: cell.source for cell in graded_cells(NOTEBOOK)}
NONCE = "lesson9-test-run"        # a grading run's nonce: the inputs come from it and the cell id


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
    before = {rw.name for rw in registered()}

    def run_cells(answer, graded_id):
        run_judged_twice([("setup cell", SETUP), ("answer cell", answer)], graded_id, GRADED[graded_id],
                         tmp_path, NONCE, "exercise9")

    yield run_cells
    for rw in registered():
        if rw.name not in before:
            remove_rewrite(rw.name)


def test_the_notebook_has_the_three_graded_cells_these_tests_drive():
    assert set(GRADED) == {"rewrite-cancel-self", "op-logcosh-grad", "tiled-matmul"}


# --- task 1: the rewrite ---------------------------------------------------------------------------

RULE = '''
@local_rewrite("canonicalize", "exercise9", tracks={tracks})
def cancel_self(fgraph, node):
    name = elemwise_name(node)
    if name not in ("sub", "true_div"):
        return None
    first, second = node.inputs
    if {same}:
        return None
    return [{replacement}]
'''
GOOD = dict(tracks="[Elemwise]", same="first is not second",
            replacement='T.zeros_like(first) if name == "sub" else T.ones_like(first)')


def rule(**changes):
    return RULE.format(**{**GOOD, **changes})


def test_the_solution_rule_passes(run):
    run(solution_cell(NOTEBOOK, "def cancel_self"), "rewrite-cancel-self")


@pytest.mark.parametrize("answer, error", [
    (rule(same="False"), AssertionError),                                        # also rewrites x - y
    (rule(tracks="[T.DimShuffle]"), AssertionError),                              # never fires
    (rule(replacement="T.zeros_like(first)"), AssertionError),                    # x / x -> 0: wrong values
    (rule(replacement='first if name == "true_div" else T.zeros_like(first)'), AssertionError),  # x / x -> x
    (rule(replacement="T.constant(0.0)"), RewriteError),                          # a scalar for a matrix
    ("", AssertionError),                                                         # no rule at all
    # matches the two sides by their op's name, not by identity: exp(x) / exp(y) would become 1
    (rule(same="first is not second and not (first.owner and second.owner and "
               "str(first.owner.op) == str(second.owner.op))"), AssertionError),
], ids=["rewrites-x-minus-y", "never-fires", "div-gives-zero", "div-gives-x", "wrong-shape", "no-rule",
        "matches-by-op-name"])
def test_wrong_rewrites_fail(run, answer, error):
    with pytest.raises(error):
        run(answer, "rewrite-cancel-self")


def test_a_differently_written_correct_rewrite_passes(run):
    """Two rules instead of one, in a later stage, one written as x * 0, the other as a fill of ones."""
    answer = '''
@local_rewrite("specialize", "mine", tracks=[Elemwise])
def minus_itself(fgraph, node):
    if elemwise_name(node) == "sub" and node.inputs[0] is node.inputs[1]:
        return [node.inputs[0] * 0]
    return None


@local_rewrite("specialize", "mine", tracks=[Elemwise])
def over_itself(fgraph, node):
    if elemwise_name(node) == "true_div" and node.inputs[0] is node.inputs[1]:
        x = node.inputs[0]
        return [T.fill(x, T.constant(1, dtype=x.dtype))]
    return None
'''
    run(answer, "rewrite-cancel-self")


# --- task 2: the op with a gradient ----------------------------------------------------------------

OP = solution_cell(NOTEBOOK, "class LogCosh")
STABLE = "(np.logaddexp(x, -x) - np.log(2)).astype(x.dtype)"
GRADIENT = "[g * T.tanh(x)]"
assert STABLE in OP and GRADIENT in OP, "the solution changed: update the variants below"


def test_the_solution_op_passes(run):
    run(OP, "op-logcosh-grad")


@pytest.mark.parametrize("answer", [
    OP.replace(GRADIENT, "[-g * T.tanh(x)]"),                        # sign error
    OP.replace(GRADIENT, "[T.tanh(x)]"),                             # forgets the chain rule
    OP.replace(GRADIENT, "[g * (1 - T.sqr(T.tanh(x)))]"),            # the second derivative
    OP.replace(STABLE, "np.log(np.cosh(x))"),                        # overflows at |x| = 800
], ids=["sign-error", "no-chain-rule", "second-derivative", "overflows"])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_wrong_ops_fail(run, answer):
    with pytest.raises(AssertionError):
        run(answer, "op-logcosh-grad")


def test_an_op_that_returns_the_wrong_dtype_fails_with_a_clear_error(run):
    answer = OP.replace(STABLE, "np.logaddexp(x, -x) - np.log(2)")      # float32 in, float64 out
    with pytest.raises(TypeError, match="produced a float64 array .* declared as TensorType\\(float32"):
        run(answer, "op-logcosh-grad")


def test_a_differently_written_correct_op_passes(run):
    answer = (OP.replace(STABLE, "(np.abs(x) + np.log1p(np.exp(-2 * np.abs(x))) - np.log(2)).astype(x.dtype)")
                .replace(GRADIENT, "[g * (1 - 2 / (T.exp(2 * x) + 1))]"))
    run(answer, "op-logcosh-grad")


# --- task 3: the tiled kernel ----------------------------------------------------------------------

KERNEL = solution_cell(NOTEBOOK, "TILED_SOURCE = ")
SECOND_BARRIER = "        for (int k = 0; k < TILE; ++k)\n            acc += A_tile[ty][k] * B_tile[k][tx];\n        __syncthreads();"
assert SECOND_BARRIER in KERNEL and "a_col < K" in KERNEL, "the solution changed: update the variants below"

NAIVE = '''TILED_SOURCE = r"""
__global__ void matmul_tiled(float *C, const float *A, const float *B, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"""'''


SHARED_PRODUCT = "            acc += A_tile[ty][k] * B_tile[k][tx];"
assert SHARED_PRODUCT in KERNEL, "the solution changed: update the variants below"
# The tiles are declared and filled, the barriers are there, but the multiply-adds read global memory:
# right values, no race, 2048 bytes of __shared__ -- and the naive kernel's 2*M*N*K reads.
GLOBAL_IN_THE_LOOP = KERNEL.replace(
    "for (int k = 0; k < TILE; ++k)\n" + SHARED_PRODUCT,
    "for (int k = t * TILE; k < t * TILE + TILE && k < K; ++k)\n"
    "            acc += (row < M && col < N) ? A[row * K + k] * B[k * N + col] : 0.0f;")
# Half the work: A from its tile, B straight from global memory.
B_FROM_GLOBAL = KERNEL.replace(
    SHARED_PRODUCT, "            if (t * TILE + k < K && col < N) acc += A_tile[ty][k] * B[(t * TILE + k) * N + col];")


@pytest.mark.parametrize("answer, message", [
    (KERNEL.replace(SECOND_BARRIER, SECOND_BARRIER.rsplit("\n", 1)[0]), "order the threads run in"),
    (KERNEL.replace("a_col < K", "a_col <= K"), "outside the matrices"),
    (KERNEL.replace("t < (K + TILE - 1) / TILE", "t < K / TILE"), "elements are wrong"),
    (NAIVE, r"read 48,285 floats from A and 48,285 from B .*no __shared__ memory in use"),
    (GLOBAL_IN_THE_LOOP, r"read 48,285 floats from A and 48,285 from B .* Allowed: at most 13,098"),
    (B_FROM_GLOBAL, r"read 3,330 floats from A and 51,504 from B .*bytes of __shared__ memory in use\)"),
], ids=["missing-barrier", "off-by-one-at-the-edge", "drops-the-last-tile", "not-tiled", "global-reads-in-the-loop",
        "b-from-global"])
def test_wrong_kernels_fail(run, answer, message):
    assert answer != KERNEL
    with pytest.raises(AssertionError, match=message):
        run(answer, "tiled-matmul")


def test_a_differently_written_correct_kernel_passes(run):
    """Flat shared arrays, blockDim instead of TILE, if/else loads, and an early exit only after the loop."""
    answer = '''TILED_SOURCE = r"""
#define T 16
__global__ void matmul_tiled(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ float a[T * T], b[T * T];
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        if (r < M && k0 + threadIdx.x < K) a[threadIdx.y * T + threadIdx.x] = A[r * K + k0 + threadIdx.x];
        else a[threadIdx.y * T + threadIdx.x] = 0.0f;
        if (c < N && k0 + threadIdx.y < K) b[threadIdx.y * T + threadIdx.x] = B[(k0 + threadIdx.y) * N + c];
        else b[threadIdx.y * T + threadIdx.x] = 0.0f;
        __syncthreads();
        for (int j = 0; j < T; ++j) sum += a[threadIdx.y * T + j] * b[j * T + threadIdx.x];
        __syncthreads();
    }
    if (r >= M || c >= N) return;
    C[r * N + c] = sum;
}
"""'''
    run(answer, "tiled-matmul")


# K-steps of 8 and 32 with the prescribed 16x16 block: tiles of 16x8 and 8x16 floats (1024 bytes; half
# the threads load), or 16x32 and 32x16 (4096 bytes; every thread loads two elements of each).
K_STEP = '''TILED_SOURCE = r"""
#define STEP {step}
__global__ void matmul_tiled(float *C, const float *A, const float *B, int M, int N, int K)
{{
    __shared__ float As[16][STEP], Bs[STEP][16];
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += STEP) {{
        for (int j = threadIdx.x; j < STEP; j += 16)
            As[threadIdx.y][j] = (row < M && k0 + j < K) ? A[row * K + k0 + j] : 0.0f;
        for (int j = threadIdx.y; j < STEP; j += 16)
            Bs[j][threadIdx.x] = (k0 + j < K && col < N) ? B[(k0 + j) * N + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < STEP; ++j)
            acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
        __syncthreads();
    }}
    if (row < M && col < N) C[row * N + col] = acc;
}}
"""'''


@pytest.mark.parametrize("step", [8, 32])
def test_a_kernel_that_steps_along_k_by_another_tile_width_passes(run, step):
    run(K_STEP.format(step=step), "tiled-matmul")


def test_a_kernel_that_loads_whole_tiles_past_the_edges_passes(run):
    """Clamped loads: every thread of an edge block reads a real element and zeroes what lies outside,
    so it reads more than the ideal count (9,216 floats where 6,549 would do for 45x37x29) and passes."""
    answer = '''TILED_SOURCE = r"""
__global__ void matmul_tiled(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ float As[16][16], Bs[16][16];
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    const int r = min(row, M - 1), c = min(col, N - 1);
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        const int ka = min(k0 + (int)threadIdx.x, K - 1), kb = min(k0 + (int)threadIdx.y, K - 1);
        const float a = A[r * K + ka], b = B[kb * N + c];
        As[threadIdx.y][threadIdx.x] = k0 + (int)threadIdx.x < K && row < M ? a : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = k0 + (int)threadIdx.y < K && col < N ? b : 0.0f;
        __syncthreads();
        for (int j = 0; j < 16; ++j)
            acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""'''
    run(answer, "tiled-matmul")
