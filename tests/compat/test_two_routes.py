"""Both porting routes equal (issue 38): ``python -m coursekit.theano`` (the alias) and changed imports
(``import coursekit as theano``) find the same names, and the porting report says what to write for the few
that exist only under the alias, and how to get the alias's float64 under changed imports."""
from __future__ import annotations

import importlib
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import types

import coursekit
from coursekit.theano.aliases import alias_name
from coursekit.theano.report import alias_only

HERE = pathlib.Path(coursekit.__file__).parent / "theano"
MACHINERY = {"coursekit.theano", "coursekit.theano.__main__", "coursekit.theano.aliases", "coursekit.theano.finder",
             "coursekit.theano.report"}


def _alias_modules():
    for path in sorted(HERE.rglob("*.py")):
        parts = path.relative_to(HERE.parent.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in MACHINERY:
            yield name, importlib.import_module(name)


def _public(module):
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        value = getattr(module, name)
        if name == "annotations" or (isinstance(value, types.ModuleType) and not value.__name__.startswith("coursekit")):
            continue  # `from __future__ import annotations`, a standard-library module the alias module uses
        yield name, value


def _unexplained(modules):
    unexplained = []
    for module_name, module in modules:
        alias = alias_name(module_name)
        for name, value in _public(module):
            where = f"{alias}.{name}"
            if alias_only(where):
                continue
            if alias == "theano":  # the top level: import coursekit as theano must have it, the same object
                ok = getattr(coursekit, name, None) is value
            else:
                home = getattr(value, "__module__", None) or getattr(value, "__name__", "")
                ok = home.startswith("coursekit.") and not home.startswith("coursekit.theano")
            if not ok:
                unexplained.append(where)
    return unexplained


def test_every_name_the_alias_adds_is_coursekits_own_or_says_what_to_write_instead():
    unexplained = _unexplained(_alias_modules())
    assert not unexplained, ("names only the alias has, with no coursekit equivalent and no entry in "
                             f"coursekit.theano.report.ALIAS_ONLY: {unexplained}")
    assert all(alias_name(m) == "theano" or alias_only(alias_name(m)) for m, _ in _alias_modules()
               if m != "coursekit.theano.root"), "an alias-only module without an ALIAS_ONLY entry"


def test_the_check_above_can_fail():
    planted = types.ModuleType("coursekit.theano.tensor.planted")
    planted.helper = lambda: 1  # defined here, outside coursekit: a name only the alias would have
    planted.exp = coursekit.tensor.exp  # coursekit's own: fine
    assert _unexplained([("coursekit.theano.tensor.planted", planted)]) == ["theano.tensor.planted.helper"]
    root = types.ModuleType("coursekit.theano.root")
    root.Param = object()  # at the top level the object must be coursekit's own, by the same name
    assert _unexplained([("coursekit.theano.root", root)]) == ["theano.Param"]
    assert alias_only("theano.no_such_module.x") is None
    assert alias_only("theano.sandbox.cuda.basic_ops.gpu_contiguous").startswith("coursekit.devices")


PROGRAM = """
import numpy as np
{imports}
x = T.vector("x")
W = theano.shared(np.array([[1.0, -2.0], [0.5, 3.0]]), name="W")
y = T.tanh(T.dot(W, x))
g = theano.gradient.grad_clip(y, -0.1, 0.1).sum()
J = theano.gradient.jacobian(y, x)
H = theano.gradient.hessian((x ** 2).sum() * y.sum(), x)
f = theano.function([theano.Param(x, default=np.array([0.3, -0.2]))], [T.grad(g, x), J, H])
for value in f():
    print(np.round(value, 6).tolist(), value.dtype)
"""


def _run(source, env_extra, alias):
    env = {k: v for k, v in os.environ.items() if k not in ("THEANO_FLAGS", "COURSEKIT_FLAGS")}
    env.update(env_extra)
    cmd = [sys.executable, "-m", "coursekit.theano", "--report-to", "report.json", "prog.py"] if alias else \
          [sys.executable, "prog.py"]
    return cmd, env


def test_a_program_gives_the_same_numbers_through_both_routes(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM.format(imports="import theano, theano.tensor as T")))
    cmd, env = _run(None, {}, alias=True)
    via_alias = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert via_alias.returncode == 0, via_alias.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["floatX"] == "float64" and not report["missing"]
    (tmp_path / "prog.py").write_text(textwrap.dedent(
        PROGRAM.format(imports="import coursekit as theano, coursekit.tensor as T")))
    cmd, env = _run(None, {"COURSEKIT_FLAGS": "floatX=float64"}, alias=False)  # the fix the report names
    via_imports = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert via_imports.returncode == 0, via_imports.stderr
    assert via_alias.stdout == via_imports.stdout and "float64" in via_alias.stdout
    cmd, env = _run(None, {}, alias=False)  # without it: coursekit's float32 (the README says so first), and the
    plain = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)  # float64
    assert plain.returncode == 1 and "COURSEKIT_FLAGS=floatX=float64" in plain.stderr  # default comes up by name


def test_the_porting_report_names_the_float64_fix_and_the_alias_only_names(tmp_path):
    (tmp_path / "prog.py").write_text("import theano\nfrom theano.tensor.signal import downsample\n"
                                      "import theano.tensor as T\nprint(T.dvector().dtype)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("THEANO_FLAGS", "COURSEKIT_FLAGS")}
    out = subprocess.run([sys.executable, "-m", "coursekit.theano", "--report", "prog.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "COURSEKIT_FLAGS=floatX=float64" in text and "coursekit.config.floatX = 'float64'" in text
    assert "theano.tensor.signal.downsample: coursekit.tensor.signal.pool.pool_2d" in text
