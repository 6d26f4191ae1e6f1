"""Global settings, Theano-style: ``coursekit.config.floatX`` and friends.

Settings come from three places, later ones winning:

1. the defaults below;
2. the environment variables ``THEANO_FLAGS`` (so that an old script's
   documented command line, ``THEANO_FLAGS=floatX=float64 python x.py``, means
   what it meant) and then ``COURSEKIT_FLAGS="device=cpu,floatX=float32"``,
   which wins where both set a flag (read once, at import);
3. assignment (``config.floatX = "float64"``) or, better, a temporary change::

       with coursekit.config.change(device="sim", floatX="float32"):
           ...

Theano could only pick its device once per process; being able to switch
inside one notebook is what lets a lesson compare CPU and GPU side by side.
Every value is validated when it is set, and an unknown flag or value is an
error that lists the valid ones.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import platform
import re

from . import wiring

_DEVICE_RE = re.compile(r"^(cpu|gpu|sim|cuda(:\d+)?)$")


def _choice(*allowed):
    def check(name, value):
        if value not in allowed:
            raise ValueError(
                f"coursekit.config.{name}={value!r} is not valid; choose one of {', '.join(map(repr, allowed))}"
            )
        return value
    check.allowed = allowed
    return check


def _boolean(name, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"coursekit.config.{name}={value!r} is not valid; use True or False")


def _device(name, value):
    value = str(value).strip()
    theano_gpu = re.match(r"^(gpu|cuda)(\d+)$", value)  # Theano's device=gpu0 / cuda1: that real GPU
    if theano_gpu:
        value = f"cuda:{theano_gpu.group(2)}"
    if not _DEVICE_RE.match(value):
        raise ValueError(
            f"coursekit.config.device={value!r} is not valid; choose 'cpu', 'gpu' (real GPU if CuPy sees one, "
            "else the simulated GPU), 'cuda' or 'cuda:N' (a real GPU or an error), or 'sim' (always simulated)"
        )
    return value


def _text(name, value):
    return str(value)


_MODES = ("FAST_RUN", "FAST_COMPILE", "DebugMode", "NanGuardMode")
_MODE_ALIASES = {"DEBUG_MODE": "DebugMode", "debug": "DebugMode"}


def _gpu_model(name, value):
    """A built-in GPU preset or a calibrated one (see coursekit.costmodel.presets)."""
    available = wiring.get("gpu_presets")()  # the preset list lives in costmodel, far above config
    value = str(value).strip().lower()
    if value not in available:
        raise ValueError(f"coursekit.config.gpu_model={value!r} is not valid; choose one of "
                         f"{', '.join(map(repr, available))} (or calibrate this machine's GPU with "
                         "`python -m coursekit calibrate`)")
    return value


def _mode(name, value):
    value = _MODE_ALIASES.get(value, value)
    return _choice(*_MODES)(name, value)


def _cpu_kernels(name, value):
    value = _choice("numpy", "numba")(name, value)
    if value == "numba":
        if importlib.util.find_spec("numba") is None:  # checked without importing numba (seconds)
            raise ValueError("coursekit.config.cpu_kernels='numba' needs numba: pip install numba "
                             "(or keep the default 'numpy')")
    return value


# name -> (default, validator, one-line help)
_SPEC = {
    "device": ("cpu", _device, "where graphs run: cpu, gpu, cuda, cuda:N (Theano's gpuN/cudaN) or sim"),
    "floatX": ("float32", _choice("float32", "float64", "float16"), "dtype of un-prefixed constructors"),
    "mode": ("FAST_RUN", _mode, "default compilation mode"),
    "allow_gc": (True, _boolean, "free intermediate buffers after each call"),
    "profile": (False, _boolean, "profile every compiled function and print a summary at exit"),
    "warn_float64": ("warn", _choice("warn", "raise", "ignore"), "what to do with float64 on a GPU device"),
    "on_opt_error": ("raise", _choice("raise", "warn", "ignore"), "what a failing graph rewrite does"),
    # Theano's debugging flags, with Theano's meaning
    "compute_test_value": ("off", _choice("off", "ignore", "warn", "raise", "pdb"),
                           "compute tag.test_value of every new variable as the graph is built"),
    "compute_test_value_opt": ("off", _choice("off", "ignore", "warn", "raise", "pdb"),
                               "accepted; rewrites here never need test values"),
    "print_test_value": (False, _boolean, "repr() of a variable shows its test value"),
    "exception_verbosity": ("low", _choice("low", "high"), "'high': runtime errors include a debugprint"),
    "optimizer_excluding": ("", _text, "rewrite names/tags to skip, separated by ':'"),
    "optimizer_including": ("", _text, "rewrite tags to add, separated by ':'"),
    "optimizer_requiring": ("", _text, "accepted (Theano: rewrites that must run)"),
    "optimizer": ("fast_run", _choice("fast_run", "merge", "fast_compile", "None", "o1", "o2", "o3", "o4"),
                  "rewrites of the default mode: 'fast_run', or 'fast_compile'/'merge'/'None' for almost none"),
    "linker": ("cvm", _choice("cvm", "vm", "py", "c", "c|py", "cvm_nogc", "vm_nogc", "c|py_nogc"),
               "accepted; coursekit has one (Python thunk) linker, '_nogc' names turn allow_gc off"),
    "cxx": ("", _text, "accepted; coursekit compiles no C++ for its ops"),
    "on_unused_input": ("raise", _choice("raise", "warn", "ignore"), "default of function(on_unused_input=)"),
    "cast_policy": ("custom", _choice("custom", "numpy+floatX"), "accepted; dtypes follow NumPy 2 here"),
    "autocast": ("numpy", _choice("numpy", "theano"),
                 "dtypes of Python numbers: 'numpy' (NumPy 2's weak scalars, int64) or 'theano' (Theano's "
                 "autocast: floats beside integer tensors are floatX, T.constant(1) is int8; the alias sets it)"),
    "integer_grad": ("refuse", _choice("refuse", "theano"),
                     "grad of or with respect to integer variables: 'refuse' (a TypeError) or 'theano' (Theano's "
                     "op contract: integer-valued outputs pass zero, gradients are floatX; the alias sets it)"),
    "deterministic": ("default", _choice("default", "more"), "accepted; coursekit's ops are deterministic"),
    "traceback.limit": (8, int, "accepted (Theano: depth of the stored creation trace)"),
    "lib.cnmem": (0.0, float, "accepted (Theano: GPU memory pool size); no effect here"),
    "gpuarray.preallocate": (0.0, float, "accepted (Theano: GPU memory pool size); no effect here"),
    "dnn.enabled": ("auto", _text, "accepted (Theano: use cuDNN); no effect here"),
    "nvcc.fastmath": (False, _boolean, "accepted; no effect here"),
    "gcc.cxxflags": ("", _text, "accepted; coursekit compiles no C++ for its ops"),
    "blas.ldflags": ("", _text, "accepted; BLAS comes with NumPy here"),
    "openmp": (False, _boolean, "accepted; no effect here"),
    "scan.allow_gc": (True, _boolean, "accepted (Theano: free scan's inner buffers)"),
    "scan.allow_output_prealloc": (True, _boolean, "accepted"),
    "assert_no_cpu_op": ("ignore", _choice("ignore", "warn", "raise", "pdb"), "accepted; no effect here"),
    # t4 by default: modelled figures should describe a GPU a student can actually get today (free notebook
    # services lend T4s), not the 2012 card of the tutorial; lessons that compare with the seeds' figures ask
    # for gtx580 by name.
    "NanGuardMode.nan_is_error": (True, _boolean, "NanGuardMode: a NaN in any node's input or output is an error"),
    "NanGuardMode.inf_is_error": (True, _boolean, "NanGuardMode: an infinity is an error"),
    "NanGuardMode.big_is_error": (True, _boolean, "NanGuardMode: a value above 1e10 in magnitude is an error"),
    "NanGuardMode.action": ("raise", _choice("raise", "warn", "pdb"), "NanGuardMode: raise AssertionError, warn, "
                            "or stop in pdb at the node"),
    "base_compiledir": ("", _text, "the directory under which compiledir lies (default $COURSEKIT_CACHE_DIR or "
                        "~/.cache/coursekit, where coursekit's compiled CUDA kernels go too)"),
    "compiledir": ("", _text, "Theano's per-platform directory for compiled code, under base_compiledir; created "
                   "when read (programs keep their own files there); coursekit compiles no C++ into it"),
    "gpu_model": ("t4", _gpu_model, "GPU preset of the cost model (modelled times): gtx580, t4, a100, h100..."),
    "cpu_kernels": ("numpy", _cpu_kernels, "fused elementwise chains on the CPU: numpy calls, or one numba loop"),
}
# Theano's warn.* flags warned about bugs of old Theano versions; those bugs never existed here.
for _bug in ("argmax_pushdown_bug", "gpusum_01_011_0111_bug", "sum_sum_bug", "sum_div_dimshuffle_bug",
             "subtensor_merge_bug", "gpu_set_subtensor1", "vm_gc_bug", "signal_conv2d_interface", "reduce_join",
             "inc_set_subtensor1", "round", "identify_1pexp_bug", "inc_subtensor1_opt"):
    _SPEC[f"warn.{_bug}"] = (False, _boolean, "accepted; the old-Theano bug it warns about does not exist here")
_SPEC["warn.ignore_bug_before"] = ("0.9", _text, "accepted; the old-Theano bugs it concerns do not exist here")
_MAIN_FLAGS = ("device", "floatX", "mode", "allow_gc", "profile", "warn_float64", "on_opt_error", "gpu_model")


class Config:
    """The settings object.  Attribute access is the API (``config.floatX``)."""

    def __init__(self):
        object.__setattr__(self, "_values", {k: v[0] for k, v in _SPEC.items()})

    def __getattr__(self, name):
        try:
            value = self._values[name]
        except KeyError:
            if any(k.startswith(name + ".") for k in _SPEC):
                return _Section(self, name)  # config.warn.round, config.lib.cnmem
            raise AttributeError(_unknown(name)) from None
        if name in ("base_compiledir", "compiledir"):
            return _compiledir(self._values["base_compiledir"], name, value)
        return value

    def __setattr__(self, name, value):
        if name not in _SPEC:
            raise AttributeError(_unknown(name))
        self._values[name] = _SPEC[name][1](name, value)

    def __dir__(self):
        return sorted({k.split(".")[0] for k in _SPEC})

    def __repr__(self):
        return "coursekit.config(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    @contextlib.contextmanager
    def change(self, **flags):
        """Temporarily change flags: ``with config.change(device="sim"): ...``."""
        old = dict(self._values)
        try:
            for name, value in flags.items():
                setattr(self, name, value)
            yield self
        finally:
            self._values.clear()
            self._values.update(old)

    def describe(self):
        """A table of every flag, its value and what it means."""
        return "\n".join(f"{k:14} = {self._values[k]!r:12} {_SPEC[k][2]}" for k in _SPEC)

    def __getitem__(self, name):
        """``config["warn.round"]``: a dotted flag by its full name."""
        if name not in _SPEC:
            raise KeyError(_unknown(name))
        return self._values[name]

    def apply_flags(self, text, source="COURSEKIT_FLAGS"):
        """Apply ``"name=value,name=value"`` (the ``COURSEKIT_FLAGS`` syntax)."""
        for item in filter(None, (part.strip() for part in text.split(","))):
            if "=" not in item:
                raise ValueError(f"{source}: {item!r} is not of the form name=value (e.g. device=cpu,floatX=float32)")
            name, value = (s.strip() for s in item.split("=", 1))
            if name not in _SPEC:
                raise ValueError(f"{source}: {_unknown(name)}")
            try:
                setattr(self, name, value)
            except ValueError as exc:
                raise ValueError(f"{source}: {exc}") from None


def _compiledir(base, which, value):
    """Theano's ``base_compiledir`` and ``compiledir``: the flag's value, or when no flag names them a directory
    per platform and Python (``compiledir_Linux-x86_64-3.11.7``, as Theano's ``compiledir_format`` made one);
    ``compiledir`` exists once read, as Theano's did (programs write their own files there)."""
    root = pathlib.Path(base or os.environ.get("COURSEKIT_CACHE_DIR") or pathlib.Path.home() / ".cache" / "coursekit")
    if which == "base_compiledir":
        return str(root)
    path = pathlib.Path(value) if value else \
        root / f"compiledir_{platform.system()}-{platform.machine()}-{platform.python_version()}"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


class _Section:
    """``config.warn``: the flags whose names start with ``warn.``, as attributes."""

    def __init__(self, cfg, prefix):
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        return getattr(self._cfg, f"{self._prefix}.{name}")

    def __setattr__(self, name, value):
        setattr(self._cfg, f"{self._prefix}.{name}", value)


def _unknown(name):
    import difflib

    close = difflib.get_close_matches(name, list(_SPEC), n=3)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    return (f"unknown flag {name!r} (coursekit.config has no flag {name!r}).{hint} Main flags: "
            f"{', '.join(_MAIN_FLAGS)}; Theano's flags are accepted too (see coursekit.config.describe()); "
            f"valid flags: {', '.join(_SPEC)}")


config = Config()
config.apply_flags(os.environ.get("THEANO_FLAGS", ""), source="THEANO_FLAGS")  # old scripts' command lines
config.apply_flags(os.environ.get("COURSEKIT_FLAGS", ""))


change_flags = config.change  # Theano's theano.change_flags(floatX=...): a context manager and a decorator
