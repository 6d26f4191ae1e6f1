"""grad stands alone: one backward sweep, and stabilisation an explicit step that does not depend on imports."""
import inspect
import subprocess
import sys

import numpy as np

import coursekit as theano
import coursekit.tensor as T
from coursekit import gradient
from coursekit.printing import pp

PROGRAM = ("import coursekit.tensor as T\nfrom coursekit.gradient import grad\nfrom coursekit.printing import pp\n"
           "x = T.dvector('x')\nprint(pp(grad(T.sum(T.log(T.sigmoid(x))), x)))\n")


def test_the_gradient_is_the_same_whatever_was_imported_before():
    """A process that imports only coursekit.gradient gets the stabilised gradient, as one that imported it all."""
    alone = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True, timeout=120)
    x = T.dvector("x")
    assert alone.stdout.strip() == pp(gradient.grad(T.sum(T.log(T.sigmoid(x))), x))
    assert "softplus" in alone.stdout  # log(sigmoid(x)) was differentiated as -softplus(-x)


def test_stabilisation_is_a_separate_step_and_can_be_left_out():
    x = T.dvector("x")
    cost = T.sum(T.log(T.sigmoid(x)))
    stable, _ = gradient.stabilized(cost)
    assert "softplus" in pp(stable) and "softplus" not in pp(cost)
    literal = gradient.grad(cost, x, stabilize=False)
    assert "softplus" not in pp(literal)
    f = theano.function([x], [gradient.grad(cost, x), literal])
    a = np.array([-3.0, 0.0, 2.0])
    stable_g, literal_g = f(a)
    np.testing.assert_allclose(stable_g, literal_g)  # the same derivative, 1 - sigmoid(x)
    np.testing.assert_allclose(stable_g, 1 - 1 / (1 + np.exp(-a)))


def test_the_backward_sweep_reads_on_one_screen():
    for fn in (gradient.grad, gradient.backward):
        lines = len(inspect.getsource(fn).splitlines())
        assert lines <= 45, f"{fn.__name__} is {lines} lines long"
