"""Imports flow one way between coursekit's packages, and function-local imports are the listed exceptions.

Read from the source with ``ast`` (nothing is imported).  A *package* is a
sub-package (``tensor``, ``compile`` ...) or a top-level module (``graph``,
``gradient`` ...).  Two checks:

* the module-scope imports between packages form no cycle;
* every function-local import of another package is in ``LOCAL_IMPORTS``
  with the reason it is local.  A new one fails this test: import at the top
  of the module (if that makes a cycle, the dependency points the wrong way:
  register the lower layer's extension point instead, as ``gradient``'s cost
  rewrites and ``compile.mode``'s registered modes do).
"""
from __future__ import annotations

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "coursekit"

FACADE = "<coursekit>"  # ``coursekit/__init__.py``: it imports every layer, so a module importing it goes up

# Modules that only re-export another package under Theano's import path: their imports do not make
# their own package depend on the other one (nothing in the package imports them).
ALIAS_MODULES = {"tensor.shared_randomstreams"}

# (importing module, imported package): why the import is inside a function
LAZY = "optional or heavy dependency, loaded on first use"
UPWARD = "a convenience that calls a higher layer (remaining layering debt)"
LOCAL_IMPORTS = {
    ("graph", "compile"): "Variable.eval() compiles a function: " + UPWARD,
    ("graph", "test_value"): "Theano's compute_test_value hook in Op.__call__: " + UPWARD,
    ("gradient", "compile"): "verify_grad compiles functions (a testing tool kept at Theano's path): " + UPWARD,
    ("tensor", "gradient"): "T.grad re-exports gradient.grad, which sits above tensor: " + UPWARD,
    ("tensor.type", "devices"): "is_device_array for a clear error on device values: " + UPWARD,
    ("config", "rewriting"): "cpu_kernels='numba' checks that numba is there: " + UPWARD,
    ("tensor.xp_run", "devices"): "an op's xp code run on the current device (devices sit above tensor): " + UPWARD,
    ("compile.linker", "printing"): "Jupyter display and exception_verbosity='high' only: " + LAZY,
    ("gradient", "rop"): "Rop/Lop re-exported at Theano's path: " + UPWARD,
    ("tensor", "rop"): "T.Rop/T.Lop re-export: " + UPWARD,
    ("tensor", "gradient_extras"): "T.jacobian/T.hessian re-export (they differentiate, above tensor): " + UPWARD,
    ("tensor.var", FACADE): "x.transfer() calls coursekit.gpu_from_host/host_from_gpu: " + UPWARD,
    ("config", "devices"): "config.gpu_model is checked against the presets, which live with the devices: " + UPWARD,
    ("profiling", "modelled"): "a profile's modelled column: modelled builds on profiling: " + UPWARD,
    ("__main__", "devices"): "each command-line subcommand loads only what it runs: " + LAZY,
    ("__main__", "config"): "each command-line subcommand loads only what it runs: " + LAZY,
    ("profiling", "printing"): "ProfileStats.summary/_repr_html_/plot render through printing, which sits above: "
                               + UPWARD,
    ("__main__", "course"): "each command-line subcommand loads only what it runs: " + LAZY,
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


def _targets(node, module, is_init):
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


def test_no_import_cycle_between_packages():
    edges = {}
    for module, target, line, local in _cross_package(_imports()):
        if not local:
            edges.setdefault(_package(module), {}).setdefault(_package(target), f"{module}:{line}")
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
    assert not cycles, "module-scope imports go both ways between packages:\n" + "\n".join(sorted(set(cycles)))


def test_function_local_imports_are_the_listed_ones():
    found = {}
    for module, target, line, local in _cross_package(_imports()):
        if local:
            found.setdefault((module, _package(target)), []).append(f"coursekit/{module.replace('.', '/')}:{line}")
    unlisted = {key: where for key, where in found.items() if key not in LOCAL_IMPORTS}
    assert not unlisted, ("function-local imports of another package (import at module level, or list them in "
                          f"LOCAL_IMPORTS with the reason): {unlisted}")


def test_the_core_layers_import_downwards_only():
    order = ["config", "graph", "fgraph", "tensor", "gradient", "rewriting", "compile"]
    rank = {name: i for i, name in enumerate(order)}
    upward = [f"{m}:{line} imports {t}" for m, t, line, local in _cross_package(_imports())
              if not local and _package(m) in rank and _package(t) in rank and rank[_package(t)] > rank[_package(m)]]
    assert not upward, upward
