"""coursekit — a small, readable Theano, and a course on putting array work on a GPU.

Port a Theano script by changing its imports::

    import coursekit as theano
    import coursekit.tensor as T

The main entry points: :func:`shared`, :func:`function` (with ``In``/``Out``,
``updates`` and ``givens``), :func:`grad`, :data:`config`, and
:mod:`coursekit.printing` for looking at graphs.

This facade is lazy: ``import coursekit`` loads only :data:`config`; each name
below is imported on first use, and the first compiler name loads the compiler
whole (``compile``, its rewrites and ``DebugMode``), so modes and rewrites are
registered before anything is compiled.  That keeps the course machinery
(``coursekit.course``) and the CUDA emulator (``coursekit.cuda``), which are
separate products, free of the compiler's import cost.
"""
from __future__ import annotations

import importlib
import sys

from . import wiring

__version__ = "0.1.0"

# The roles lower layers ask for (see coursekit/wiring.py): each is played by a higher layer.
for _role, _target in {
    "compile_function": "compile.function:function",            # Variable.eval()
    "compute_test_values": "test_value:compute_test_values",    # Op.__call__ with compute_test_value on
    "gpu_presets": "costmodel.presets:available",               # config.gpu_model's valid names
    "is_device_array": "devices.simarray:is_device_array",      # TensorType.filter's error on device values
    "forget_scalar_op": "devices:forget_scalar_op",             # scalar.ops.register(op, replace=True)
    "gpu_from_host": "devices.transfer:gpu_from_host",          # x.transfer('gpu')
    "host_from_gpu": "devices.transfer:host_from_gpu",          # x.transfer('cpu')
    "profile_view": "printing.profile_view",           # ProfileStats.summary/_repr_html_/plot
    "function_html": "printing:function_html",                  # a compiled function in Jupyter
    "debugprint": "printing:debugprint",                        # exception_verbosity='high'
    "grad": "gradient:grad", "Rop": "rop:Rop", "Lop": "rop:Lop",  # T.grad, T.Rop, T.Lop, gradient.Rop
    "jacobian": "jacobian:jacobian", "hessian": "jacobian:hessian",  # T.jacobian, T.hessian
    "registered_modes": "debugmode",                            # mode='DebugMode' (it registers itself)
}.items():
    wiring.provide(_role, _target)

from .config import config  # noqa: E402,F401  (after the wiring: COURSEKIT_FLAGS may check gpu_model)

# name -> (module, attribute); a module alone when the attribute is the module
_NAMES = {
    "In": ("compile", "In"), "Out": ("compile", "Out"), "Mode": ("compile", "Mode"),
    "SharedVariable": ("compile", "SharedVariable"), "function": ("compile", "function"),
    "shared": ("compile", "shared"),
    "Apply": ("graph", "Apply"), "Constant": ("graph", "Constant"), "Op": ("graph", "Op"),
    "Type": ("graph", "Type"), "Variable": ("graph", "Variable"), "TensorType": ("tensor.type", "TensorType"),
    "grad": ("gradient", "grad"), "dot": ("tensor", "dot"), "pp": ("printing", "pp"),
    "scan": ("scan_module", "scan"), "map": ("scan_module", "map"), "reduce": ("scan_module", "reduce"),
    "foldl": ("scan_module", "foldl"), "foldr": ("scan_module", "foldr"),
    "Param": ("compile", "Param"), "clone": ("compile", "clone"), "change_flags": ("config", "change_flags"),
    "Rop": ("rop", "Rop"), "Lop": ("rop", "Lop"),
    "gpu_from_host": ("devices.transfer", "gpu_from_host"), "host_from_gpu": ("devices.transfer", "host_from_gpu"),
}
_SUBMODULES = ("tensor", "printing", "gradient", "profiling", "rewriting", "compile", "devices", "cuda",
               "debugmode", "course", "random", "scan_module", "graph", "scalar", "fgraph", "rop", "ifelse",
               "costmodel", "work", "jacobian", "sparse")
_STANDALONE = ("course", "cuda", "devices", "config")  # need no compiler loaded
# Theano packages that only the ``import theano`` alias has: what a port that changed its imports writes instead
_THEANO_ONLY = {
    "sandbox": "theano.sandbox was Theano's old GPU package: write coursekit.gpu_from_host / host_from_gpu, "
               "coursekit.devices.kernel_inputs.gpu_contiguous, coursekit.random.MRG_RandomStreams (or import "
               "the alias module itself: from coursekit.theano import sandbox)",
    "misc": "theano.misc held Theano's helpers for other libraries (pycuda_init joined PyCUDA's CUDA context): "
            "coursekit needs none of them, drop the import (or: import coursekit.theano.misc.pycuda_init)",
    "gof": "theano.gof is coursekit.graph (Variable, Apply, Op, graph_inputs, apply_nodes_between) and "
           "coursekit.fgraph; Theano's other graph walks are the alias's (from coursekit.theano import gof)",
    "gpuarray": "theano.gpuarray was Theano's libgpuarray back end; coursekit's GPU is config.device='gpu'",
}


def _load_compiler():
    """The compiler whole: every rewrite registered, every mode (DebugMode too) known."""
    for name in ("tensor", "compile", "debugmode"):
        importlib.import_module(f".{name}", __name__)


def __getattr__(name):
    if name in _NAMES:
        module, attribute = _NAMES[name]
        _load_compiler()
        value = getattr(importlib.import_module(f".{module}", __name__), attribute)
    elif name in _SUBMODULES:
        if name not in _STANDALONE and f"{__name__}.{name}" not in sys.modules:  # (one being imported: as is)
            _load_compiler()
        value = importlib.import_module(f".{name}", __name__)
    elif name in _THEANO_ONLY:
        raise AttributeError(f"module 'coursekit' has no attribute {name!r}: {_THEANO_ONLY[name]}")
    else:
        raise AttributeError(f"module 'coursekit' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES) | set(_SUBMODULES))
