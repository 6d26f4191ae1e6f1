"""Wrong answers that must fail and valid alternatives that must pass (issue 13's misconception families).

Each case substitutes answers into the solution notebook's solution regions (see ``answers.py``),
grades it against the exercise notebook the way the grader does (restored graded cells, sandbox,
judged outside the kernel) and checks the listed graded cells: a wrong answer loses that cell's
points with a reason that says what was checked and what to look at; an alternative keeps them.
Graded cells a case does not list are dropped from its notebook (they score "missing graded cell"),
so a case runs only what it needs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from answers import substitute
from coursekit.course.grading.grader import grade_notebook, load_reference

ROOT = Path(__file__).resolve().parents[3]

HOST_RUNNING_MEAN = '''
total = theano.shared(np.float64(0.0), name="total")
count = theano.shared(np.int64(0), name="count")

def step(value):
    total.set_value(total.get_value() + value)
    count.set_value(count.get_value() + 1)
    return total.get_value() / count.get_value()
'''
RUNNING_MEAN_AS_DICT = '''
total = theano.shared(np.float64(0.0), name="total")
count = theano.shared(np.int64(0), name="count")
new_total, new_count = total + v, count + 1
step = theano.function([v], new_total / new_count, updates={total: new_total, count: new_count})
'''
FLOAT64_TRAINER = '''
x = theano.shared(np.asarray(X, dtype="float64"), name="x")
y = theano.shared(np.asarray(Y, dtype="float64"), name="y")
w = theano.shared(np.zeros(X.shape[1]), name="w")
b = theano.shared(np.asarray(0.0), name="b")
z = T.dot(x, w) + b
cost = (y * T.softplus(-z) + (1 - y) * T.softplus(z)).mean()
gw, gb = T.grad(cost, [w, b])
train = theano.function([], cost, updates=[(w, w - learning_rate * gw), (b, b - learning_rate * gb)])
return train, w, b
'''
SIGMOID_TRAINER = '''
x = theano.shared(X.astype("float32"), name="x")
y = theano.shared(Y.astype("float32"), name="y")
w = theano.shared(np.zeros(X.shape[1], dtype="float32"), name="w")
b = theano.shared(np.float32(0), name="b")
p = T.nnet.sigmoid(T.dot(x, w) + b)
cost = T.mean(-y * T.log(p) - (1 - y) * T.log(1 - p))
train = theano.function([], cost, updates={w: w - learning_rate * T.grad(cost, w),
                                           b: b - learning_rate * T.grad(cost, b)})
return train, w, b
'''
PLACEMENT_BY_NAME = '''
result = []
for node in fn.toposort():
    name = type(node.op).__name__
    if name in ("GpuFromHost", "HostFromGpu"):
        where = "transfer"
    else:
        where = "gpu" if name.startswith("Gpu") else "cpu"
    result.append((name, where))
return result
'''
PLACEMENT_BY_ATTRIBUTES = '''
return [(type(node.op).__name__, "transfer" if node.op.is_transfer else ("gpu" if node.op.device == "gpu" else "cpu"))
        for node in fn.toposort()]
'''
RULE_FOR_LOG_P_ONLY = '''
if elemwise_name(node) != "log":
    return None
div = producer(node.inputs[0], "true_div")
total = producer(div.inputs[1], "add") if div is not None and is_constant(div.inputs[0], 1) else None
if total is None:
    return None
one, other = total.inputs
power = producer(other, "exp")
if power is None or not is_constant(one, 1):
    return None
return [-T.softplus(power.inputs[0])]
'''
RULE_WITHOUT_CONSTANTS = '''
def exponent(var):
    div = producer(var, "true_div")
    total = producer(div.inputs[1], "add") if div is not None else None
    if total is None:
        return None
    powers = [producer(v, "exp") for v in total.inputs]
    return next((p.inputs[0] for p in powers if p is not None), None)

if elemwise_name(node) != "log":
    return None
t = exponent(node.inputs[0])
if t is not None:
    return [-T.softplus(t)]
rest = producer(node.inputs[0], "sub")
t = exponent(rest.inputs[1]) if rest is not None else None
return None if t is None else [-T.softplus(-t)]
'''
RULE_WITH_MAX_AND_LOG1P = '''
def exponent(var):
    div = producer(var, "true_div")
    if div is None or not is_constant(div.inputs[0], 1):
        return None
    total = producer(div.inputs[1], "add")
    if total is None or len(total.inputs) != 2:
        return None
    a, b = total.inputs
    if is_constant(a, 1) and producer(b, "exp") is not None:
        return producer(b, "exp").inputs[0]
    if is_constant(b, 1) and producer(a, "exp") is not None:
        return producer(a, "exp").inputs[0]
    return None

def minus_softplus(u):   # -log(1 + e^u), never forming a large e^u
    return -(T.maximum(u, 0) + T.log1p(T.exp(-abs(u))))

if elemwise_name(node) != "log":
    return None
t = exponent(node.inputs[0])
if t is not None:
    return [minus_softplus(t)]
rest = producer(node.inputs[0], "sub")
if rest is not None and is_constant(rest.inputs[0], 1) and exponent(rest.inputs[1]) is not None:
    return [minus_softplus(-exponent(rest.inputs[1]))]
return None
'''
TIMEIT_BENCHMARK = '''
import timeit
times = {}
for n in sizes:
    fn = make_fn(n)
    fn()
    times[n] = min(timeit.repeat(fn, number=1, repeat=repeat))
return times
'''
OWN_SYNCHRONISED_LOOP = '''
import time
from coursekit.devices import synchronize
times = {}
for n in sizes:
    fn = make_fn(n)
    fn()
    synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        synchronize()
        best = min(best, time.perf_counter() - start)
    times[n] = best
return times
'''
FLAT_KERNEL = '''
MATRIX_SOURCE = r"""
__global__ void multiply_matrix(float *dest, const float *a, const float *b, int rows, int cols)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) dest[i] = a[i] * b[i];
}
"""
'''
FLAT_LAUNCH = '''
kernel(cuda.Out(dest), cuda.In(a), cuda.In(b), np.int32(rows), np.int32(cols), block=(256, 1, 1),
       grid=((rows * cols + 255) // 256, 1))
'''
HOST_GPU_PERFORM = '''
host = np.asarray(x.get()) * np.asarray(y.get())
output_storage[0][0] = cuda.to_device(host)
'''
OFF_BY_ONE_ADD_SUB = '''
ADD_SUB_SOURCE = r"""
__global__ void add_sub(float *sum, float *diff, const float *x, const float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        sum[i] = x[i] + y[i];
        diff[i] = x[i] - y[i];
    }
}
"""
'''

# Members of the same families, written another way
COUNT_NOT_UPDATED = '''
total = theano.shared(np.float64(0.0), name="total")
count = theano.shared(np.int64(0), name="count")
step = theano.function([v], (total + v) / (count + 1), updates=[(total, total + v)])
'''
FLOAT64_WEIGHTS_ONLY = FLOAT64_TRAINER.replace('dtype="float64"', 'dtype="float32"')   # data float32, w and b float64
PLACEMENT_BY_PRINTED_NAME = '''
return [(type(node.op).__name__,
         "transfer" if "FromHost" in str(node.op) or "FromGpu" in str(node.op)
         else ("gpu" if "gpu" in str(node.op).lower() else "cpu"))
        for node in fn.toposort()]
'''
RULE_ONE_ORDER_ONLY = RULE_WITH_MAX_AND_LOG1P.replace(
    "    if is_constant(b, 1) and producer(a, \"exp\") is not None:\n        return producer(a, \"exp\").inputs[0]\n", "")
PERF_COUNTER_WITHOUT_SYNC = '''
import time
times = {}
for n in sizes:
    fn = make_fn(n)
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    times[n] = best
return times
'''
SWAPPED_AXES_KERNEL = '''
MATRIX_SOURCE = r"""
__global__ void multiply_matrix(float *dest, const float *a, const float *b, int rows, int cols)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) dest[row * cols + col] = a[row * cols + col] * b[row * cols + col];
}
"""
'''
SWAPPED_AXES_LAUNCH = '''
kernel(cuda.Out(dest), cuda.In(a), cuda.In(b), np.int32(rows), np.int32(cols), block=(16, 16, 1),
       grid=((rows + 15) // 16, (cols + 15) // 16))
'''
HOST_PERFORM_REUSED = '''
product = [None]
self.perform(node, [np.asarray(x), np.asarray(y)], [product])
output_storage[0][0] = cuda.to_device(product[0])
'''
HALF_GUARDED_ADD_SUB = '''
ADD_SUB_SOURCE = r"""
__global__ void add_sub(float *sum, float *diff, const float *x, const float *y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) sum[i] = x[i] + y[i];
    diff[i] = x[i] - y[i];
}
"""
'''

# case: (notebook prefix, [(anchor, answer)], {graded cell id: expected reason prefix})
CASES = {
    "01-running-mean-on-the-host": ("01", [("def make_running_mean(", HOST_RUNNING_MEAN)], {
        "running-mean": "failed assertion: step is a function, not a compiled function"}),
    "01-running-mean-with-a-dict": ("01", [("def make_running_mean(", RUNNING_MEAN_AS_DICT)], {
        "running-mean": "passed"}),
    "05-wrong": ("05", [("def make_trainer(", FLOAT64_TRAINER), ("def placement(", PLACEMENT_BY_NAME),
                        ("def stable_xent_rule(", RULE_FOR_LOG_P_ONLY)], {
        "trainer": "failed assertion: these ops compute on the CPU although device='gpu'",
        "placement": "failed assertion: on a graph whose class names mislead",
        "xent-rewrite": "failed assertion: -y log(p) - (1-y) log(1-p), p = 1/(1 + exp(-z)), float32: not finite at z = "}),
    "05-rule-without-constants": ("05", [("def stable_xent_rule(", RULE_WITHOUT_CONSTANTS)], {
        "xent-rewrite": "passed",
        "xent-rewrite-near-misses": "failed assertion: log(1 / (2 + exp(t))) at t = "}),
    "05-alternatives": ("05", [("def make_trainer(", SIGMOID_TRAINER), ("def placement(", PLACEMENT_BY_ATTRIBUTES),
                               ("def stable_xent_rule(", RULE_WITH_MAX_AND_LOG1P)], {
        "trainer": "passed", "placement": "passed", "xent-rewrite": "passed", "xent-rewrite-near-misses": "passed"}),
    "06-timeit-without-sync": ("06", [("def benchmark(", TIMEIT_BENCHMARK)], {
        "benchmark": "failed assertion: n="}),
    "06-own-synchronised-loop": ("06", [("def benchmark(", OWN_SYNCHRONISED_LOOP)], {"benchmark": "passed"}),
    "07-wrong": ("07", [("MATRIX_SOURCE = r", FLAT_KERNEL), ("def multiply_matrix(", FLAT_LAUNCH),
                        ("def gpu_perform(", HOST_GPU_PERFORM), ("ADD_SUB_SOURCE = r", OFF_BY_ONE_ADD_SUB)], {
        "matrix-2d": "failed assertion: shape (20, 10): the kernel launched on a 2-D grid",
        "op-multiply": "failed assertion: device=sim, shape (4, 5): gpu_perform launched no kernel",
        "op-add-sub": "error: MemoryAccessError: kernel `add_sub`: out-of-bounds"}),
    "01-count-not-updated": ("01", [("def make_running_mean(", COUNT_NOT_UPDATED)], {
        "running-mean": "failed assertion: the compiled step updates total and not count"}),
    "05-family": ("05", [("def make_trainer(", FLOAT64_WEIGHTS_ONLY), ("def placement(", PLACEMENT_BY_PRINTED_NAME),
                         ("def stable_xent_rule(", RULE_ONE_ORDER_ONLY)], {
        "trainer": "failed assertion: these ops compute on the CPU although device='gpu'",
        "placement": "failed assertion: on a graph whose class names mislead",
        "xent-rewrite": "failed assertion: -(1-y) log(1-p) - y log(p), p = 1/(exp(-z) + 1), float32: not finite at z = "}),
    "06-perf-counter-without-sync": ("06", [("def benchmark(", PERF_COUNTER_WITHOUT_SYNC)], {
        "benchmark": "failed assertion: n="}),
    "07-family": ("07", [("MATRIX_SOURCE = r", SWAPPED_AXES_KERNEL), ("def multiply_matrix(", SWAPPED_AXES_LAUNCH),
                         ("def gpu_perform(", HOST_PERFORM_REUSED), ("ADD_SUB_SOURCE = r", HALF_GUARDED_ADD_SUB)], {
        "matrix-2d": "failed assertion: shape (",
        "op-multiply": "failed assertion: device=sim, shape (4, 5): gpu_perform launched no kernel",
        "op-add-sub": "error: MemoryAccessError: kernel `add_sub`: out-of-bounds"}),
}
EXTRA_MESSAGE_WORDS = {   # what a reason must also say: where, and what to look at
    "matrix-2d": "x indices", "xent-rewrite": "with the library's rules off", "trainer": "float64 data stays on the host",
    "benchmark": "synchronise", "op-add-sub": "argument `x`",
}


def notebook_for(prefix, answers, keep, tmp: Path) -> Path:
    path = next((ROOT / "solutions").glob(f"{prefix}_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    for anchor, code in answers:
        substitute(nb, anchor, code)
    nb.cells = [c for c in nb.cells if c.metadata.get("coursekit", {}).get("id", next(iter(keep))) in keep]
    target = tmp / path.name
    nbformat.write(nb, target)
    return target


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("answers")
    jobs = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for case, (prefix, answers, expected) in CASES.items():
            folder = root / case
            folder.mkdir()
            submission = notebook_for(prefix, answers, set(expected), folder)
            reference = load_reference(next((ROOT / "exercises").glob(f"{prefix}_*.ipynb")))
            jobs[case] = pool.submit(grade_notebook, submission, reference, cell_timeout=120, notebook_timeout=300)
        return {case: {s.cell_id: s for s in job.result()} for case, job in jobs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_wrong_answers_fail_and_alternatives_pass(graded, case):
    for cell_id, reason in CASES[case][2].items():
        score = graded[case][cell_id]
        assert score.reason.startswith(reason), (case, cell_id, score.reason)
        assert score.points == (score.max_points if reason == "passed" else 0), (case, cell_id, score)
        if reason != "passed" and cell_id in EXTRA_MESSAGE_WORDS:
            assert EXTRA_MESSAGE_WORDS[cell_id] in score.reason, (case, cell_id, score.reason)


def test_the_answer_helper_replaces_only_the_region():
    nb = nbformat.read(next((ROOT / "solutions").glob("05_*.ipynb")), as_version=4)
    substitute(nb, "def stable_xent_rule(", RULE_FOR_LOG_P_ONLY)
    cell = next(c for c in nb.cells if "def stable_xent_rule(" in c.source)
    assert "BEGIN SOLUTION" not in cell.source and "def exponent(" not in cell.source
    assert "    return [-T.softplus(power.inputs[0])]\n\n\nz_sym" in cell.source
