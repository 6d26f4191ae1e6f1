"""The Theano names issue 38 found missing, each against Theano's documented behaviour.

``scalar.upcast``, ``compat.python2x``, ``NanGuardMode``, ``config.compiledir``, ``Function.fn``, ``ViewOp``,
``OpRemove``, ``register_canonicalize``, ``tensor.float_dtypes``, ``grad_not_implemented``, ``sandbox.softsign``;
and the extension API working together for a user's op and rewrite, as an LSTM library of 2015 used it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import config
from coursekit.compile import NanGuardMode, ViewOp
from coursekit.gradient import GradNotImplementedError, UndefinedGradientError, grad_not_implemented, grad_undefined
from coursekit.rewriting import remove_rewrite
from coursekit.rewriting.registration import LocalOptimizer, OpRemove, local_optimizer, register_canonicalize
from coursekit.scalar import upcast


# ------------------------------------------------------------------------------------------------ upcast
@pytest.mark.parametrize("floatx, dtypes, expected", [
    ("float32", ("int32", "float32"), "float32"),     # NumPy says float64; Theano keeps floatX
    ("float32", ("int64", "float32"), "float32"),
    ("float32", ("float32", "float64"), "float64"),   # an explicit float64 wins
    ("float32", ("int8", "int16"), "int16"),
    ("float32", ("int8", "uint8"), "int16"),
    ("float32", ("bool", "int8"), "int8"),
    ("float64", ("int32", "float32"), "float64"),     # with floatX=float64 NumPy's answer stands
    ("float32", ("complex64", "float64"), "complex128"),
    ("float16", ("int8", "float16"), "float16"),
    ("float16", ("int32", "float32"), "float64"),     # float32 named: float16 not kept; floatX is not float32
])
def test_upcast_follows_theano(floatx, dtypes, expected):
    with config.change(floatX=floatx):
        assert upcast(*dtypes) == expected


def test_upcast_names_a_bad_dtype():
    with pytest.raises(TypeError, match="'floaty' is not a dtype"):
        upcast("int8", "floaty")


def test_float_dtypes_and_friends_are_theanos_lists():
    assert T.float_dtypes == ["float16", "float32", "float64"]
    assert T.discrete_dtypes[0] == "bool" and "uint64" in T.integer_dtypes and "complex64" in T.continuous_dtypes
    assert sorted(T.all_dtypes) == sorted(T.discrete_dtypes + T.continuous_dtypes)


# ------------------------------------------------------------------------------------------ NanGuardMode
@pytest.mark.parametrize("values, what", [([-1.0, 2.0], "NaN detected"), ([0.0, 2.0], "Inf detected")])
def test_nanguardmode_names_the_node_that_made_the_bad_value(values, what):
    x = T.dvector("x")
    y = T.log(x) * 2
    f = theano.function([x], y.sum(), mode=NanGuardMode(nan_is_error=True, inf_is_error=True, big_is_error=True))
    assert f([1.0, 2.0]) == pytest.approx(2 * np.log(2))
    with np.errstate(all="ignore"), pytest.raises(AssertionError) as info:
        f(values)
    message = str(info.value)
    assert what in message and "output 0 of node 0" in message and "log" in message
    assert "test_theano_long_tail_names.py" in message  # the line that built it


def test_nanguardmode_checks_inputs_and_big_values_and_can_be_told_not_to():
    x = T.dvector("x")
    f = theano.function([x], x * 2, mode="NanGuardMode")
    with pytest.raises(AssertionError, match=r"Big value detected \(1 of 2 elements.*input 0"):
        f([1e11, 1.0])
    g = theano.function([x], x * 2, mode=NanGuardMode(nan_is_error=True, inf_is_error=True, big_is_error=False))
    np.testing.assert_allclose(g([1e11, 1.0]), [2e11, 2.0])
    i = T.lvector("i")
    assert theano.function([i], i * 3, mode=NanGuardMode())([2**40]).tolist() == [3 * 2**40]  # ints: never


# ------------------------------------------------------------------------------------------- compiledir
def test_compiledir_is_a_directory_under_base_compiledir_and_follows_the_flags(tmp_path):
    with config.change(base_compiledir=str(tmp_path / "base")):
        path = config.compiledir
        assert os.path.isdir(path) and os.path.dirname(path) == str(tmp_path / "base")
        assert os.path.basename(path).startswith("compiledir_")
        open(os.path.join(path, "mine.txt"), "w").close()  # programs keep their files there
    with config.change(compiledir=str(tmp_path / "exact")):
        assert config.compiledir == str(tmp_path / "exact") and os.path.isdir(tmp_path / "exact")
    env = dict(os.environ, THEANO_FLAGS=f"compiledir={tmp_path / 'flag'}")
    out = subprocess.run([sys.executable, "-c", "import coursekit; print(coursekit.config.compiledir)"],
                         capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert out == str(tmp_path / "flag")


# ---------------------------------------------------------------------------------------------- f.fn
def test_function_fn_shows_the_linked_program_and_runs_it_on_the_input_cells():
    a, b = T.dvector("a"), T.dvector("b")
    f = theano.function([a, b], [T.exp(a) + b, a * b])
    assert f.fn.nodes == f.toposort() and len(f.fn.thunks) == len(f.fn.nodes)
    assert all(n.outputs[0] in f.fn.storage_map for n in f.fn.nodes)
    f.input_storage[0].storage[0] = np.array([0.0, 1.0])
    f.input_storage[1].data = np.array([2.0, 3.0])
    f.fn()
    np.testing.assert_allclose(f.output_storage[0].storage[0], [3.0, np.e + 3.0])
    np.testing.assert_allclose(f.output_storage[1].data, [0.0, 3.0])
    assert f.fn.call_counts == [1] * len(f.fn.nodes)
    np.testing.assert_allclose(f([1.0, 1.0], [0.0, 0.0])[0], [np.e, np.e])  # the checked call is unaffected


# ------------------------------------------------- ViewOp, OpRemove, register_canonicalize, grad markers
class GradClip(ViewOp):
    """The 2015 LSTM libraries' gradient clipping: a ViewOp whose grad clips, removed once grads are built."""

    __props__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def grad(self, inputs, output_grads):
        return [T.clip(g, self.lo, self.hi) for g in output_grads]


def test_a_user_viewop_with_its_own_gradient_and_an_opremove_at_canonicalize():
    clip = GradClip(-1.0, 1.0)
    register_canonicalize(OpRemove(clip), name="test_remove_grad_clip")
    try:
        x = T.dvector("x")
        y = (clip(x) * 5).sum()
        g = T.grad(y, x)
        f = theano.function([x], [y, g])
        value, grad = f([1.0, 2.0])
        assert value == 15.0
        np.testing.assert_allclose(grad, [1.0, 1.0])  # 5 clipped to 1: the op's grad ran
        assert not [n for n in f.toposort() if isinstance(n.op, GradClip)]  # and the op is gone
        assert theano.function([x], clip(x))([3.0]).tolist() == [3.0]
    finally:
        remove_rewrite("test_remove_grad_clip")
    f = theano.function([x], clip(x) * 2)
    assert [n for n in f.toposort() if isinstance(n.op, GradClip)]  # without the rewrite it stays


def test_viewop_alone_is_the_identity_with_the_identity_gradient():
    x = T.dvector("x")
    v = theano.compile.view_op(x)
    f = theano.function([x], [v, T.grad((v ** 2).sum(), x)])
    out, g = f([1.0, -2.0])
    np.testing.assert_allclose(out, [1.0, -2.0]) and np.testing.assert_allclose(g, [2.0, -4.0])


def test_register_canonicalize_takes_a_local_optimizer_function_and_a_tag_decorator():
    double = GradClip(-9.0, 9.0)

    @register_canonicalize("test_tag")
    @local_optimizer([GradClip])
    def test_clip_to_times_two(node):  # a user's rewrite: replace the op by x * 2 (to see it fire)
        if isinstance(node.op, GradClip) and node.op.hi == 9.0:
            return [node.inputs[0] * 2]
        return False

    try:
        x = T.dvector("x")
        assert theano.function([x], double(x))([1.5]).tolist() == [3.0]
        without = theano.compile.Mode().excluding("test_tag")  # the tag it was registered with selects it
        assert theano.function([x], double(x), mode=without)([1.5]).tolist() == [1.5]
    finally:
        remove_rewrite("test_clip_to_times_two")


def test_register_canonicalize_refuses_what_is_not_an_optimizer():
    with pytest.raises(TypeError, match="expected a local optimizer"):
        register_canonicalize(42, name="x")
    with pytest.raises(TypeError, match="pass name="):
        register_canonicalize(LocalOptimizer())


class Floor2(theano.Op):
    """A user's op of two inputs whose gradient for the second is not written."""

    __props__ = ()

    def make_node(self, x, k):
        x, k = T.as_tensor_variable(x), T.as_tensor_variable(k)
        return theano.Apply(self, [x, k], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] * inputs[1]

    def grad(self, inputs, output_grads):
        x, k = inputs
        return [output_grads[0] * k, grad_not_implemented(self, 1, k, "k is a scale we never learn")]


def test_grad_not_implemented_raises_only_when_the_cost_depends_on_that_input():
    x, k = T.dvector("x"), T.dscalar("k")
    y = Floor2()(x, k).sum()
    np.testing.assert_allclose(theano.function([x, k], T.grad(y, x))([1.0, 2.0], 3.0), [3.0, 3.0])
    with pytest.raises(NotImplementedError, match="input 1 .* is not implemented. k is a scale") as info:
        T.grad(y, k)
    assert isinstance(info.value, TypeError) and isinstance(info.value, GradNotImplementedError)
    marker = grad_undefined(Floor2(), 1, k)
    assert "mathematically undefined" in marker.reason and marker.error is UndefinedGradientError


# ----------------------------------------------------------------------- names only the alias has
def test_compat_python2x_and_sandbox_softsign_through_the_alias(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import theano, theano.tensor as T
        from theano.compat.python2x import OrderedDict, DefaultOrderedDict, any, product
        from theano.compat import izip, PY3
        from theano.sandbox.softsign import softsign
        d = DefaultOrderedDict(list); d["b"].append(1); d["a"].append(2)
        assert list(d) == ["b", "a"] and OrderedDict is __import__("collections").OrderedDict and PY3
        assert list(izip([1], [2])) == [(1, 2)] and any([0, 1]) and len(list(product([1, 2], [3]))) == 2
        x = T.dvector()
        f = theano.function([x], [softsign(x), T.grad(softsign(x).sum(), x)])
        print(*[np.round(v, 6).tolist() for v in f([-3.0, 0.0, 1.0])])
        print(theano.scalar.upcast("int32", "float32"), theano.tensor.float_dtypes[1], theano.gof.OpRemove.__name__)

        class GradClip(theano.compile.ViewOp):  # the 2015 LSTM libraries' idiom, through the alias's paths
            def __init__(self, lo, hi):
                self.lo, self.hi = lo, hi
            def grad(self, args, g_outs):
                return [T.clip(g, self.lo, self.hi) for g in g_outs]
        clip = GradClip(-1.0, 1.0)
        T.opt.register_canonicalize(theano.gof.OpRemove(clip), name="grad_clip_through_the_alias")
        f = theano.function([x], T.grad((clip(x) * 5).sum(), x))
        print(f([1.0, 2.0]).tolist(), [type(n.op).__name__ for n in f.maker.fgraph.toposort()].count("GradClip"))
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("THEANO_FLAGS", "COURSEKIT_FLAGS")}
    out = subprocess.run([sys.executable, "-m", "coursekit.theano", str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[-0.75, 0.0, 0.5] [0.0625, 1.0, 0.25]"  # x / (1 + |x|), 1 / (1 + |x|)^2
    assert lines[1] == "float64 float32 OpRemove"  # the alias's floatX is Theano's float64
    assert lines[2] == "[1.0, 1.0] 0"  # the op's clipped gradient, and the op removed from the compiled graph
