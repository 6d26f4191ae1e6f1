"""Imports flow one way between coursekit's packages, and function-local imports are few and explained.

Read from the source with ``ast`` (nothing is imported).  A *package* is a
sub-package (``tensor``, ``compile`` ...) or a top-level module (``graph``,
``gradient`` ...).  The checks:

* the imports between packages form no cycle -- module-scope and
  function-local imports alike, so laziness cannot hide a knot;
* every function-local import of coursekit code (within a package too) is in
  ``LOCAL_IMPORTS`` with the reason it is local, and there are at most
  ``MAX_LOCAL_IMPORTS`` of them.  A new one fails this test: import at the top
  of the module.  If that makes a cycle, the dependency points the wrong way:
  ask for a role in ``coursekit/wiring.py`` (the facade says which higher
  module plays it), as ``x.eval()`` and ``T.grad`` do;
* every role a module asks ``wiring`` for is provided by the facade;
* the course machinery and the CUDA emulator load no compiler module;
* the README's package table ("Inside ``coursekit/``", bottom layer first) names every package, and
  every import between packages goes to the same row or a row above it;
* ``importlib.import_module`` is an import too: with a literal name it is counted as one (a call
  inside a function is a function-local import), and a call with a computed name is allowed only in
  the modules of ``COMPUTED_IMPORTS``, each with its reason.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1] / "coursekit"
README = ROOT.parent / "README.md"

FACADE = "<coursekit>"  # ``coursekit/__init__.py``: it may name every layer (lazily), so nothing below imports it

# Modules that only re-export another package under Theano's import path: their imports do not make
# their own package depend on the other one (nothing in the package imports them).  Since Theano's
# names moved into coursekit/theano (issue 37), there are none.
ALIAS_MODULES = set()

MAX_LOCAL_IMPORTS = 26   # a ratchet: lower it when one goes, never raise it to fit a new one
LAZY = "loaded on first use: "
CYCLE = "the two modules use each other (the other one imports this one at its top): "
# (importing module, imported module): why the import is inside a function
LOCAL_IMPORTS = {
    ("__main__", "course.authoring.exercises"): LAZY + "each command-line subcommand loads only what it runs",
    ("__main__", "course.grading.grader"): LAZY + "each command-line subcommand loads only what it runs",
    ("__main__", "course.grading.report"): LAZY + "each command-line subcommand loads only what it runs",
    ("__main__", "course.grading.sandbox"): LAZY + "each command-line subcommand loads only what it runs",
    ("__main__", "costmodel"): LAZY + "each command-line subcommand loads only what it runs",
    ("__main__", "course.grading"): LAZY + "each command-line subcommand loads only what it runs",
    ("__main__", "course.authoring"): LAZY + "each command-line subcommand loads only what it runs",
    ("compile.linker", "compile.rebuild"): CYCLE + "Function.copy and pickling compile again",
    ("compile.rebuild", "compile.function"): CYCLE + "rebuilding a function calls function()",
    ("course.grading.child", "course.grading.execute"): LAZY + "the forked child loads the run's program after the fork",
    ("course.grading.execute", "course.grading.judge"): LAZY + "the sandboxed runner judges only after the notebook ran",
    ("course.grading.grader", "course.grading.kernel_cache"): LAZY + "the emulator's compiler only when the shared kernel cache is built",
    ("cuda.checked", "cuda.emulator"): CYCLE + "the AddressSanitizer run reuses the emulator's labels and checks",
    ("cuda.emulator", "cuda.checked"): LAZY + "check='memory' only: the AddressSanitizer subprocess",
    ("devices", "devices.types"): LAZY + "a tensor type: coursekit.cuda uses devices without loading tensors",
    ("devices.device", "devices.types"): LAZY + "a tensor type: coursekit.cuda uses devices without loading tensors",
    ("devices.device", "scalar.cuda_codegen"): LAZY + "elementwise CUDA code generation; coursekit.cuda never needs it",
    ("scalar.numba_kernels", "scalar.numba_math"): LAZY + "numba (a second to import) only when a loop compiles",
    ("scan_module.op", "scan_module.grad"): CYCLE + "the gradient of a scan builds another scan",
    ("tensor.type", "tensor.var"): CYCLE + "a type makes its variables, and variables are built on types",
    ("tensor.nnet", "tensor.math"): CYCLE + "math re-exports nnet's softmax",
}


# modules that call importlib.import_module with a name computed at run time: why
COMPUTED_IMPORTS = {
    "wiring": "a role's provider, named by the facade",
    "tensor": "T.nnet, T.signal ... loaded on first attribute access",
    "course": "the rooms' public names loaded on first use; old module paths resolved to their new homes",
    "theano.root": "theano's top-level modules loaded on first attribute access",
    "theano.finder": "the import alias maps each theano.* name to its coursekit module",
    "devices.device": "CuPy's own cublas module (not coursekit code)",
}


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module):
    return module.split(".")[0] if module else ""


@functools.lru_cache(maxsize=None)
def _imports():
    """(module, imported module, line, local?) for every import of coursekit code."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module, is_init = _module_name(path), path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stack = [(node, False) for node in tree.body]
        while stack:
            node, local = stack.pop()
            inner = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))
            for target in _targets(node, module, is_init):
                found.append((module, target, node.lineno, local))
    return tuple(found)


def _import_module_call(node):
    """The first argument of an ``importlib.import_module(...)`` call, else None."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name == "import_module":
            return node.args[0]
    return None


def _targets(node, module, is_init):
    argument = _import_module_call(node)
    if isinstance(argument, ast.Constant) and str(argument.value).startswith("coursekit."):
        return [argument.value.partition(".")[2]]
    if isinstance(node, ast.Import):
        return [a.name.partition(".")[2] for a in node.names if a.name.startswith("coursekit.")]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        if not (node.module or "").startswith("coursekit"):
            return []
        base = node.module.partition(".")[2]
        return [base] if base else [a.name for a in node.names]
    here = module.split(".") if (is_init and module) else module.split(".")[:-1]
    here = here[: len(here) - (node.level - 1)] if node.level > 1 else here
    if node.module:
        return [".".join(here + [node.module])]
    return [".".join(here + [a.name]) if _is_module(here + [a.name]) else ".".join(here) or FACADE
            for a in node.names]


def _is_module(parts):
    path = ROOT.joinpath(*parts)
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _cross_package(imports):
    return [(m, t, line, local) for m, t, line, local in imports
            if m and _package(t) and _package(m) != _package(t) and m not in ALIAS_MODULES]


def _edges(imports):
    """package -> {package it imports: where}, module-scope and function-local imports alike."""
    edges = {}
    for module, target, line, local in _cross_package(imports):
        edges.setdefault(_package(module), {}).setdefault(_package(target), f"{module}:{line}")
    return edges


def _cycles(edges):
    cycles = []
    for start in edges:
        path, seen = [(start, [start])], set()
        while path:
            node, trail = path.pop()
            for nxt, where in edges.get(node, {}).items():
                if nxt == start:
                    cycles.append(" -> ".join(trail + [start]) + f" (last edge at {where})")
                elif nxt not in seen:
                    seen.add(nxt)
                    path.append((nxt, trail + [nxt]))
    return sorted(set(cycles))


def test_no_import_cycle_between_packages_even_through_function_local_imports():
    cycles = _cycles(_edges(_imports()))
    assert not cycles, "imports go both ways between packages:\n" + "\n".join(cycles)


def test_the_cycle_check_sees_a_function_local_import():
    """The check above can fail: one upward import inside a function is a cycle."""
    planted = _imports() + (("tensor.math", "compile.function", 1, True),)
    assert any(c.startswith("compile -> tensor -> compile") or "tensor -> compile" in c for c in _cycles(_edges(planted)))


def _local_imports():
    found = {}
    for module, target, line, local in _imports():
        if local and module != "" and not target.startswith("<"):
            found.setdefault((module, target), []).append(f"coursekit/{module.replace('.', '/')}:{line}")
    return found


def test_function_local_imports_are_few_and_each_has_its_reason():
    found = _local_imports()
    unlisted = {key: where for key, where in found.items() if key not in LOCAL_IMPORTS}
    assert not unlisted, ("function-local imports of coursekit code that are not in LOCAL_IMPORTS (import at the "
                          f"top of the module, or list them with the reason they are local): {unlisted}")
    stale = sorted(set(LOCAL_IMPORTS) - set(found))
    assert not stale, f"LOCAL_IMPORTS lists imports that no longer exist (remove them): {stale}"
    count = sum(len(where) for where in found.values())
    assert count <= MAX_LOCAL_IMPORTS, f"{count} function-local imports of coursekit code (at most {MAX_LOCAL_IMPORTS})"


def _readme_rows(text=None):
    """package -> its row in the README's table "Inside coursekit/" (0: the bottom layer)."""
    text = README.read_text(encoding="utf-8") if text is None else text
    table = text.split("| package | what lives there |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for index, line in enumerate(line for line in table.splitlines()[2:] if line.startswith("|")):
        for name in re.findall(r"`(\w+)(?:\.py|/)`", line.split("|")[1]):
            rows[name] = index
    return rows


def _packages():
    return sorted({path.stem for path in ROOT.glob("*.py") if path.stem != "__init__"}
                  | {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()})


def test_the_readme_table_names_every_package_and_only_packages():
    rows = _readme_rows()
    missing = [name for name in _packages() if name not in rows]
    assert not missing, (f"packages missing from the README's table (\"Inside coursekit/\"): {missing}; add each to "
                         "the row of its layer with one sentence on what it is for")
    unknown = sorted(set(rows) - set(_packages()))
    assert not unknown, f"the README's table names packages that do not exist: {unknown}"


def _against_the_table(imports, rows):
    return [f"coursekit/{m.replace('.', '/')}:{line} imports coursekit.{t}"
            + (" (inside a function)" if local else "")
            for m, t, line, local in _cross_package(imports)
            if rows.get(_package(t), -1) > rows.get(_package(m), len(rows))]


def test_every_import_goes_to_the_same_row_of_the_readme_table_or_one_above():
    upward = _against_the_table(_imports(), _readme_rows())
    assert not upward, ("imports against the README table's order (a package imports only its own row and the rows "
                        "above it; ask coursekit/wiring.py for a role instead):\n" + "\n".join(upward))


def test_the_order_check_sees_an_upward_import():
    rows = _readme_rows()
    planted = (("tensor.math", "compile.function", 1, False),)
    assert _against_the_table(planted, rows) == ["coursekit/tensor/math:1 imports coursekit.compile.function"]
    assert rows["graph"] < rows["tensor"] < rows["compile"] < rows["course"]


def test_a_computed_import_module_name_is_only_where_its_reason_is_given():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            argument = _import_module_call(node)
            if argument is not None and not isinstance(argument, ast.Constant) and module:
                found.setdefault(module, []).append(node.lineno)
    unexplained = {module: lines for module, lines in found.items() if module not in COMPUTED_IMPORTS}
    assert not unexplained, ("importlib.import_module with a computed name (import the module by name, or add it to "
                             f"COMPUTED_IMPORTS with the reason): {unexplained}")
    stale = set(COMPUTED_IMPORTS) - set(found)
    assert not stale, f"COMPUTED_IMPORTS lists modules that no longer compute an import name (remove them): {stale}"


def test_every_role_asked_of_wiring_is_provided_by_the_facade():
    facade = (ROOT / "__init__.py").read_text(encoding="utf-8")
    provided = dict(re.findall(r'"(\w+)": "([\w.]+(?::\w+)?)"', facade.split("wiring.provide")[0]))
    asked = {}
    for path in sorted(ROOT.rglob("*.py")):
        for role in re.findall(r'wiring\.get\("(\w+)"\)', path.read_text(encoding="utf-8")):
            asked.setdefault(role, []).append(_module_name(path))
    missing = {role: where for role, where in asked.items() if role not in provided}
    assert not missing, f"roles asked of coursekit.wiring that coursekit/__init__.py does not provide: {missing}"
    for role, target in provided.items():
        module = target.split(":")[0]
        assert _is_module(module.split(".")), f"wiring role {role!r}: no module coursekit.{module}"
    # a role is for calling UP only: its provider's package must already depend on the asker's package
    # (otherwise the asker should simply import it)
    edges = _edges([i for i in _imports() if not i[3]])
    sideways = [(role, asker, provided[role]) for role, askers in asked.items() for asker in askers
                if not _reaches(edges, _package(provided[role].split(":")[0]), _package(asker))]
    assert not sideways, f"wiring roles that do not call a higher layer (import the provider instead): {sideways}"


def _reaches(edges, start, goal):
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        for nxt in edges.get(node, {}):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _loaded_by(statement):
    code = f"import sys; {statement}; print(' '.join(m for m in sys.modules if m.startswith('coursekit')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


def test_the_course_and_the_cuda_emulator_load_no_compiler_module():
    compiler = ("coursekit.tensor", "coursekit.rewriting", "coursekit.compile", "coursekit.scalar",
                "coursekit.gradient")
    graded = _loaded_by("import coursekit.course.authoring.graded")
    assert not {m for m in graded if m.startswith(compiler)}, sorted(graded)
    grader = _loaded_by("import coursekit.course.grading.grader, coursekit.course.grading.runner, coursekit.course.student.check")
    assert not {m for m in grader if m.startswith(compiler)}, sorted(grader)
    assert not {m for m in grader if m.startswith("coursekit.cuda")}, "the grader loads the emulator before it builds its cache"
    cuda = _loaded_by("import coursekit.cuda")
    assert not {m for m in cuda if m.startswith(compiler)}, sorted(cuda)
    assert "coursekit.compile" in _loaded_by("import coursekit; coursekit.function")  # the facade still works


def test_theano_compatibility_sits_on_top_and_nothing_in_the_library_imports_it():
    """``coursekit/theano`` owns every module that exists only for Theano's import paths (issue 37): it may
    import any layer, and no module outside it imports it (function-local imports included)."""
    upward = [f"coursekit/{m.replace('.', '/')}:{line} imports coursekit.{t}" for m, t, line, local in _imports()
              if _package(t) == "theano" and _package(m) != "theano"]
    assert not upward, upward
    alias_only = ["compat", "sandbox", "misc", "gradient_extras", "tensor/legacy", "tensor/shared_randomstreams",
                  "tensor/signal/downsample"]
    left = [p for p in alias_only if (ROOT / p).is_dir() or (ROOT / f"{p}.py").exists()]
    assert not left, f"Theano-only modules outside coursekit/theano: {left}"
