"""``import theano`` resolving to coursekit (coursekit.theano): the alias, its defaults, its refusals, its report.

Each program runs in a fresh interpreter, as a user's script would, so the alias and its floatX default
never leak into the rest of the test session.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest


def run(tmp_path, source, *args, env=None, check=True):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    proc = subprocess.run([sys.executable, "-m", "coursekit.theano", *args, str(script)], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


def clean_env(**extra):
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("THEANO_FLAGS", "COURSEKIT_FLAGS")}
    env.update(extra)
    return env


def test_theano_and_its_submodules_are_coursekits(tmp_path):
    out = run(tmp_path, """
        import theano, theano.tensor as T, coursekit
        import theano.tensor.nnet.conv
        from theano.tensor.signal import pool
        from theano.gof.graph import inputs
        from theano.sandbox.rng_mrg import MRG_RandomStreams
        import coursekit.tensor.signal.pool as real_pool
        assert T.matrix is coursekit.tensor.matrix and theano.function is coursekit.function
        assert pool.pool_2d is real_pool.pool_2d
        assert theano.tensor.nnet.conv.conv2d is coursekit.tensor.nnet.conv.conv2d
        x = T.matrix("x")
        assert inputs([T.exp(x) + 1])[0] is x
        from theano.gof.graph import is_same_graph
        from theano.scan_module.scan_utils import equal_computations
        assert is_same_graph(T.exp(x) + 1, T.exp(x) + 1) and not is_same_graph(T.exp(x), T.log(x))
        assert equal_computations([x * 2], [x * 2]) and not equal_computations([x * 2], [x * 3])
        from theano import gpuarray
        assert gpuarray.pygpu_activated is False and theano.sandbox.cuda.cuda_enabled is False
        import numpy as np
        print(theano.function([x], (x * 2).sum())(np.ones((2, 3))))
    """, env=clean_env()).stdout
    assert out.strip() == "12.0"


def test_theano_only_paths_lead_into_coursekit_theano_and_the_library_keeps_its_own_names(tmp_path):
    """Issue 37: the modules that exist only for Theano's paths live in coursekit/theano; the old paths a Theano
    program imports still work through the alias, and each leads to coursekit's own object."""
    out = run(tmp_path, """
        import numpy as np
        import theano, theano.tensor as T, coursekit, coursekit.random, coursekit.devices.kernel_inputs as ki
        import theano.misc.pycuda_init
        from theano.sandbox.cuda import basic_ops, cuda_enabled
        from theano.sandbox.rng_mrg import MRG_RandomStreams
        from theano.tensor.shared_randomstreams import RandomStreams
        from theano.tensor.signal import downsample
        from theano.gradient import grad_clip, jacobian
        import coursekit.gradient
        assert MRG_RandomStreams is coursekit.random.MRG_RandomStreams
        assert RandomStreams is coursekit.random.RandomStreams
        assert basic_ops.gpu_contiguous is ki.gpu_contiguous and basic_ops.gpu_from_host is coursekit.gpu_from_host
        assert grad_clip is coursekit.gradient.grad_clip and jacobian is coursekit.gradient.jacobian
        assert theano.sandbox.__name__ == "theano.sandbox" and cuda_enabled is False
        x = T.tensor4("x")
        y = downsample.max_pool_2d(x, (2, 2), ignore_border=True)
        print(theano.function([x], y)(np.arange(16.0).reshape(1, 1, 4, 4)).ravel().tolist())
        for name in ("sandbox", "misc", "gradient_extras"):
            assert not hasattr(coursekit, name), name
    """, env=clean_env()).stdout
    assert out.strip() == "[5.0, 7.0, 13.0, 15.0]"
    import coursekit

    with pytest.raises(AttributeError, match="coursekit.gpu_from_host"):
        coursekit.sandbox  # noqa: B018 - the port that changed its imports is told what to write


def test_theano_is_an_attribute_of_itself_as_in_theano(tmp_path):
    """Theano's package bound ``theano.theano`` (its __init__ imported theano.tests); programs rely on it
    through ``from theano import theano`` and ``from theano import *``."""
    out = run(tmp_path, """
        import theano
        from theano import theano as again
        assert again is theano
        ns = {}
        exec("from theano import *", ns)
        assert ns["theano"] is theano and ns["function"] is theano.function
        with theano.change_flags(floatX="float32"):
            inner = theano.config.floatX

        @theano.change_flags(floatX="float16")
        def decorated():
            return theano.config.floatX

        print(ns["theano"].config.floatX, inner, decorated(), theano.config.floatX)
    """, env=clean_env()).stdout
    assert out.split() == ["float64", "float32", "float16", "float64"]


def test_theano_defaults_apply_under_the_alias_and_flags_still_win(tmp_path):
    source = """
        import theano, theano.tensor as T
        print(theano.config.floatX, T.matrix().dtype)
    """
    assert run(tmp_path, source, env=clean_env()).stdout.split() == ["float64", "float64"]
    assert run(tmp_path, source, env=clean_env(THEANO_FLAGS="floatX=float32")).stdout.split() == ["float32"] * 2


def test_import_coursekit_alone_keeps_float32_and_no_theano():
    code = ("import coursekit, importlib.util; print(coursekit.config.floatX, "
            "importlib.util.find_spec('theano') is None)")
    env = clean_env()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["float32", "True"]


def test_a_real_theano_is_never_shadowed_silently(tmp_path):
    fake = tmp_path / "site" / "theano"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    env = clean_env(PYTHONPATH=str(tmp_path / "site"))
    proc = run(tmp_path, "import theano\nprint(getattr(theano, 'REAL', False))\n", env=env, check=False)
    assert proc.returncode != 0
    assert "a real Theano is installed" in proc.stderr and "shadow_real_theano=True" in proc.stderr
    forced = run(tmp_path, "import theano\nprint(getattr(theano, 'REAL', False))\n", "--shadow-real-theano",
                 env=env)
    assert forced.stdout.strip() == "False"


def test_a_missing_name_stops_with_a_message_and_lands_in_the_report(tmp_path):
    proc = run(tmp_path, """
        import theano.tensor as T
        y = T.exp(T.vector())
        try:
            import theano.sandbox.no_such_backend
        except ImportError:
            pass
        T.no_such_function(y)
    """, "--report-to", str(tmp_path / "r.json"), env=clean_env(), check=False)
    assert proc.returncode == 1
    assert "theano.tensor.no_such_function: coursekit has no 'no_such_function'" in proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["missing"] == ["theano.sandbox.no_such_backend", "theano.tensor.no_such_function"]
    assert "theano.tensor.exp" in report["as_theano"] and "theano.tensor.vector" in report["as_theano"]


def test_report_names_differences_and_star_imports_do_not_count_as_use(tmp_path):
    proc = run(tmp_path, """
        from theano.tensor import *
        import theano.tensor.nnet as nnet
        y = nnet.ultra_fast_sigmoid(vector())
    """, "--report", env=clean_env())
    assert "theano.tensor.nnet.ultra_fast_sigmoid: exact sigmoid" in proc.stderr
    assert "theano.tensor.matrix\n" not in proc.stderr  # imported by *, never used


def test_install_in_process_and_uninstall():
    import coursekit
    import coursekit.theano as alias

    with coursekit.config.change():
        alias.install(theano_defaults=False)
        try:
            import theano.tensor as T
            assert T.dot is coursekit.tensor.dot
        finally:
            alias.uninstall()
    assert "theano" not in sys.modules
    with pytest.raises(ImportError):
        import theano  # noqa: F401


def test_python_floats_beside_integer_tensors_take_floatx_as_in_theano(tmp_path):
    source = """
        import theano.tensor as T
        x, i, b = T.fvector(), T.ivector(), T.bvector()
        one = T.constant(1)
        print((T.gt(x, 0) * 1.0).dtype, (b + 1.5).dtype, (i * 0.5).dtype, (x * 2.5).dtype, one.dtype,
              ((one - 0.9) * x).dtype, T.constant(300).dtype)
    """
    out = run(tmp_path, source, env=clean_env(THEANO_FLAGS="floatX=float32")).stdout.split()
    # int32 with float32 is float64 in Theano too; Lasagne's updates compute (T.constant(1) - rho) * grad
    assert out == ["float32", "float32", "float64", "float32", "int8", "float32", "int16"]
    plain = subprocess.run([sys.executable, "-c", "import coursekit.tensor as T; print((T.bvector() + 1.5).dtype)"],
                           capture_output=True, text=True, env=clean_env(), timeout=120)
    assert plain.stdout.strip() == "float64"  # coursekit's own rule stays NumPy 2's


def test_without_report_a_run_still_names_what_was_missing(tmp_path):
    proc = run(tmp_path, """
        try:
            from theano.tensor.nnet import no_such_op
        except ImportError:
            pass
    """, env=clean_env())
    assert "1 Theano name(s) coursekit does not have: theano.tensor.nnet.no_such_op" in proc.stderr


def test_theano_param_clone_and_ifelse_as_theano_had_them(tmp_path):
    out = run(tmp_path, """
        import numpy as np
        import theano, theano.tensor as T
        x, y = T.dvector("x"), T.dscalar("y")
        f = theano.function([x, theano.Param(y, default=2.0)], x.sum() * y)
        doubled = theano.clone(x * 3, replace={x: x * 2})
        pick = theano.ifelse.ifelse(T.gt(y, 0), x, -x)
        g = theano.function([x, y], [doubled, pick])
        print(f(np.ones(2)), f(np.ones(2), 5.0), *[v.tolist() for v in g(np.ones(2), -1.0)])
    """, env=clean_env()).stdout.split(" ", 2)
    assert out[:2] == ["4.0", "10.0"] and out[2].strip() == "[6.0, 6.0] [-1.0, -1.0]"
