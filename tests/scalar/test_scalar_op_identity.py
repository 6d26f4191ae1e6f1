"""A scalar op is known by what it computes, never by its name alone (issue 37, item 1).

Each trap below was a wrong number without a word: a notebook cell that registers an op, is corrected
and run again got the old op back; one graph holding the old op and the corrected one merged them; the
output-dtype cache and the CUDA kernel cache answered for the old op. Names here are unique per test:
the registry is the process's.
"""
from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.tensor as T
from coursekit import devices
from coursekit.scalar import ops as scalar_ops
from coursekit.scalar.ops import ScalarOp, get, register
from coursekit.tensor.elemwise import Elemwise

_SERIAL = itertools.count()


def _name(base):
    return f"{base}_{next(_SERIAL)}"


def square(x, out=None):      # the bug: the cell meant x cubed
    return np.multiply(x, x, out=out)


def cube(x, out=None):        # the fix
    result = np.multiply(x, x)
    return np.multiply(result, x, out=out)


def buggy_and_fixed(name):
    """The op as first written (squares, C squares), and as corrected (cubes, C cubes)."""
    return (ScalarOp(name, 1, square, c_expr="({0} * {0})"),
            ScalarOp(name, 1, cube, c_expr="({0} * {0} * {0})"))


def run(scalar_op, dtype="float64"):
    """The op on [2.0]; float32 goes to a GPU device, where float64 stays on the host."""
    x = T.vector("x", dtype=dtype)
    return theano.function([x], Elemwise(scalar_op)(x))(np.array([2.0], dtype=dtype))


def test_a_corrected_op_under_a_taken_name_is_refused_with_the_way_to_replace_it():
    name = _name("cube")
    buggy, fixed = buggy_and_fixed(name)
    assert register(buggy) is buggy and run(get(name)).tolist() == [4.0]
    with pytest.raises(ValueError, match=rf"different scalar op named '{name}'.*replace=True"):
        register(fixed)                         # the re-run cell: before, this returned the buggy op silently
    assert get(name) is buggy                   # refused: nothing changed
    assert register(fixed, replace=True) is fixed and get(name) is fixed
    assert run(get(name)).tolist() == [8.0]


def test_registering_the_same_op_again_returns_it():
    op = ScalarOp(_name("cbrt"), 1, np.cbrt, c_expr="cbrt({0})")
    assert register(op) is op and register(op) is op
    assert register(ScalarOp(op.name, 1, np.cbrt, c_expr="cbrt({0})")) is op   # the same computation


def test_the_table_s_own_ops_cannot_be_replaced():
    with pytest.raises(ValueError, match="'exp' is one of coursekit's own scalar ops"):
        register(ScalarOp("exp", 1, np.exp2, c_expr="exp2({0})"), replace=True)
    assert get("exp").impl is np.exp


def test_one_graph_with_the_old_and_the_corrected_op_keeps_both():
    buggy, fixed = buggy_and_fixed(_name("cube"))
    assert buggy != fixed and hash(buggy) != hash(fixed)
    x = T.dvector("x")
    f = theano.function([x], [Elemwise(buggy)(x), Elemwise(fixed)(x)])   # merge must not make them one node
    old, new = f(np.array([2.0]))
    assert old.tolist() == [4.0] and new.tolist() == [8.0]


def test_the_output_dtype_of_an_op_is_its_own():
    name = _name("halve")
    to_float32 = ScalarOp(name, 1, lambda x, out=None: np.asarray(x, dtype="float32") / 2)
    to_float64 = ScalarOp(name, 1, lambda x, out=None: np.asarray(x, dtype="float64") / 2)
    assert to_float32.output_dtype("int64") == "float32"
    assert to_float64.output_dtype("int64") == "float64"      # before: float32, the other op's answer
    register(to_float32)
    register(to_float64, replace=True)
    assert not [key for key in scalar_ops._DTYPE_CACHE if key[0] == to_float32.key()]   # forgotten


@pytest.fixture
def cuda():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.on("cuda"), theano.config.change(device="cuda"):
            yield devices.current()


def test_a_cuda_kernel_is_compiled_for_the_op_it_runs(cuda):
    buggy, fixed = buggy_and_fixed(_name("cube"))
    assert run(buggy, "float32").tolist() == [4.0]
    assert run(fixed, "float32").tolist() == [8.0]          # before: the kernel cached for the other op of that name


def test_replacing_an_op_drops_its_cuda_kernels(cuda):
    buggy, fixed = buggy_and_fixed(_name("cube"))
    register(buggy)
    assert run(buggy, "float32").tolist() == [4.0]
    assert any(key[0].uses(buggy) for key in cuda._kernels)
    register(fixed, replace=True)
    assert not any(key[0].uses(buggy) for key in cuda._kernels)
    assert run(get(fixed.name), "float32").tolist() == [8.0]


def test_a_function_using_a_registered_op_pickles_and_unpickles_to_it():
    op = register(ScalarOp(_name("cbrt"), 1, np.cbrt, c_expr="cbrt({0})"))
    x = T.dvector("x")
    f = theano.function([x], Elemwise(op)(x) * 2)
    g = pickle.loads(pickle.dumps(f))
    assert g(np.array([8.0])).tolist() == [4.0]
    assert pickle.loads(pickle.dumps(op)) is op


def test_an_unregistered_op_of_library_functions_pickles_to_an_equal_op():
    op = ScalarOp(_name("cbrt"), 1, np.cbrt, c_expr="cbrt({0})")
    again = pickle.loads(pickle.dumps(op))
    assert again == op and hash(again) == hash(op)
