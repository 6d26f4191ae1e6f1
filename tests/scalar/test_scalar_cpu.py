"""coursekit.scalar.cpu: one elementwise CPU thunk, its case chosen from the types, each case NumPy's answer."""
import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import config
from coursekit.scalar.cpu import _case, cpu_thunk, cpu_thunk_source


def _node(out):
    return out.owner


@pytest.mark.parametrize("build, case", [
    (lambda: T.fscalar() + T.fscalar(), "zero_d"),         # NumPy's scalar operator
    (lambda: T.exp(T.fscalar()), "general"),                # 0-d without an exact operator
    (lambda: T.fvector() + T.fscalar(), "wide"),            # a wide input and a narrow one
    (lambda: T.fmatrix() + T.fmatrix(), "wide"),
    (lambda: T.exp(T.fmatrix()), "general"),                # one input: nothing to sort out
    (lambda: T.fvector() + T.dvector(), "general"),         # mixed dtypes: no squeezing
])
def test_the_case_follows_from_the_types(build, case):
    node = _node(build())
    assert _case(node, node.op.scalar_op, [[None] for _ in node.inputs])[0] == case
    assert "def thunk():" in cpu_thunk_source(node)


CASES = [
    ("0-d", [T.fscalar(), T.fscalar()], [np.float32(1.5), np.float32(-2.25)]),
    ("wide", [T.fmatrix(), T.frow()], [np.arange(12, dtype="float32").reshape(3, 4), np.ones((1, 4), "float32")]),
    ("vectors", [T.dvector(), T.dvector(), T.dvector()], [np.arange(5.0), np.ones(5), np.full(5, 2.0)]),
]


@pytest.mark.parametrize("label, inputs, values", CASES, ids=[c[0] for c in CASES])
def test_every_case_gives_numpys_answer_and_reuses_its_buffer(label, inputs, values):
    out = inputs[0] * inputs[1] - inputs[-1]
    node = out.owner
    mul_node = node.inputs[0].owner
    cells = [[v] for v in values]
    mul_cell, out_cell = [None], [None]
    mul = cpu_thunk(mul_node, mul_node.op.scalar_op, cells[:2], mul_cell)
    sub = cpu_thunk(node, node.op.scalar_op, [mul_cell, cells[-1]], out_cell)
    for _ in range(2):
        mul()
        sub()
    expected = values[0] * values[1] - values[-1]
    assert out_cell[0].dtype == np.asarray(expected).dtype and np.array_equal(out_cell[0], expected)
    if out_cell[0].ndim:
        first = out_cell[0]
        mul()
        sub()
        assert out_cell[0] is first  # the second call wrote into the first call's buffer


def test_a_broadcast_the_type_does_not_declare_is_refused_by_every_case():
    x, y = T.fmatrix("x"), T.fmatrix("y")
    f = theano.function([x, y], x + y)
    with pytest.raises(ValueError, match="broadcastable"):
        f(np.ones((3, 4), "float32"), np.ones((1, 4), "float32"))


def test_a_wider_buffer_is_never_written_into():
    """A (3, 4) buffer must not take a (1, 4) result: NumPy would broadcast the inputs up to it."""
    x, y = T.frow("x"), T.frow("y")
    f = theano.function([x, y], x + y)
    a = np.ones((1, 4), "float32")
    assert f(a, a).shape == (1, 4)


@pytest.mark.skipif(not __import__("importlib.util").util.find_spec("numba"), reason="needs numba")
def test_a_numba_loop_kernel_takes_the_loop_case_and_falls_back_for_broadcasting():
    with config.change(cpu_kernels="numba"):
        x, y = T.fvector("x"), T.fvector("y")
        f = theano.function([x, y], T.exp(x) * y + 1)
    (node,) = f.toposort()
    assert _case(node, node.op.scalar_op, [[None], [None]])[0] == "loop"
    a, b = np.linspace(-1, 1, 7, dtype="float32"), np.full(7, 2.0, "float32")
    np.testing.assert_allclose(f(a, b), np.exp(a) * b + 1, rtol=3e-7)
