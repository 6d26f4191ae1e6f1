"""The linker checks an op's outputs against its declared types unless the op's own class declares them verified."""
import inspect

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.compile import linker
from coursekit.graph import Apply, Op
from coursekit.tensor.elemwise import Elemwise


def _checked(f):
    return [str(n.op) for n, thunk in zip(f.toposort(), f.thunks) if thunk.__name__ == "checked_thunk"]


def test_the_librarys_ops_run_unwrapped():
    """Every op of a training step declares verified outputs: no per-call check is added."""
    x, y, w = T.fmatrix("x"), T.fvector("y"), theano.shared(np.zeros(3, "float32"), name="w")
    p = T.sigmoid(T.dot(x, w))
    cost = T.mean(-y * T.log(p) - (1 - y) * T.log(1 - p)) + 0.01 * (w ** 2).sum()
    train = theano.function([x, y], cost, updates=[(w, w - 0.1 * T.grad(cost, w))])
    assert len(train.thunks) == len(train.toposort()) and not _checked(train)


def test_a_subclass_of_a_library_op_is_checked_until_it_declares_itself():
    class Halve(Elemwise):
        pass

    assert Elemwise.verified_outputs and not Halve.verified_outputs  # the declaration is not inherited
    x = T.dvector("x")
    op = Halve(T.exp(x).owner.op.scalar_op)
    f = theano.function([x], op(x))
    assert _checked(f) == [str(op)]


def test_a_wrong_output_dtype_is_a_clear_error():
    class Doubles(Op):
        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return Apply(self, [x], [T.TensorType("int32", x.type.broadcastable).make_variable()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0] * 2.0  # float64: not what make_node declared

    x = T.dvector("x")
    f = theano.function([x], Doubles()(x))
    with pytest.raises(TypeError, match="produced a float64 array .* declared as .*int32"):
        f(np.ones(3))


def test_the_linker_never_asks_where_an_op_was_written():
    assert "__module__" not in inspect.getsource(linker)
