"""A fused elementwise chain as ONE machine-code loop on the CPU, with numba (optional).

The NumPy form of a ``Composite`` calls one ufunc per step: each call is a pass
over memory and, on small arrays, a microsecond of dispatch.  numba can compile
the whole chain, written for one element, into a real NumPy ufunc
(``numba.vectorize``): one call, one pass, no temporaries -- the CPU twin of
the single CUDA kernel a Composite becomes on a GPU.

Measured on the course's 2-core machine (see benchmarks/README.md):

* arithmetic chains win: ``(a*b - 0.5*a) / (b + 1)`` over 400 float32 values
  takes 1.6 us as one numba loop against 10.5 us as four NumPy calls (230400
  values: 232 us against 571 us);
* transcendental steps lose: NumPy's ``exp``/``tanh``/``log`` are SIMD code,
  while numba calls the C library once per element (``exp`` of 230400 float32:
  3.0 ms against 0.49 ms).  So only Composites without such steps are
  compiled; the others keep their NumPy form.
* numba's own cost is paid once per process (importing it: 1-2 s) and once per
  new kernel (0.5-1.5 s to compile; a few ms when it comes from the on-disk
  cache).  That is why NumPy stays the default (``config.cpu_kernels``): a
  course compiles many small functions once each.

Numerics: every step is rounded to its dtype, in order, as in the NumPy form
(``np.float32(a * b)``), so arithmetic gives the same bits; tests compare both.
The kernel source is written to a file in the cache folder
(``$COURSEKIT_CACHE_DIR``, default ``~/.cache/coursekit``) so that numba's
``cache=True`` can keep the machine code between processes.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

import numpy as np

FLOAT_DTYPES = ("float32", "float64")
MIN_STEPS = 2

# one element of each supported scalar op; {0}, {1} are the arguments, {zero} a typed 0
TEMPLATES = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "true_div": "{0} / {1}",
    "neg": "-{0}",
    "sqr": "{0} * {0}",
    "abs": "abs({0})",
    # NumPy's maximum/minimum return NaN when either argument is NaN
    # (NaN is tested first with !=, which never raises the "invalid" flag that >= raises on NaN)
    "maximum": "({0} if {0} != {0} else {1} if {1} != {1} else {0} if {0} >= {1} else {1})",
    "minimum": "({0} if {0} != {0} else {1} if {1} != {1} else {0} if {0} <= {1} else {1})",
    "relu": "({0} if {0} != {0} else {0} if {0} >= {zero} else {zero})",
    "second": "{1}",
}

_LOADED: dict = {}


def available() -> bool:
    """Is numba installed?  (Checked without importing it.)"""
    return importlib.util.find_spec("numba") is not None


def supports(composite, input_dtypes) -> bool:
    """Can (and should) this Composite run as one numba loop?"""
    if input_dtypes is None or len(composite.program) < MIN_STEPS:
        return False
    if any(d not in FLOAT_DTYPES for d in input_dtypes):
        return False
    if any(c.dtype.name not in FLOAT_DTYPES for c in composite.constants):
        return False
    return all(_template(op) is not None and dtype in FLOAT_DTYPES for op, _, dtype in composite.program)


def _template(op):
    if op.name in TEMPLATES:
        return TEMPLATES[op.name]
    if op.name in ("cast{float32}", "cast{float64}"):
        return "{0}"  # the step's own rounding to its dtype does the cast
    return None


def kernel_source(composite, input_dtypes) -> str:
    """Python for one element, each step rounded to its dtype (``np.float32(...)``)."""
    args = [f"i{i}" for i in range(len(input_dtypes))]
    lines = ["import numpy as np", "", "", f"def element({', '.join(args)}):"]
    for j, (op, refs, dtype) in enumerate(composite.program):
        names = []
        for kind, i in refs:
            if kind == "in":
                names.append(f"i{i}")
            elif kind == "const":
                c = composite.constants[i]
                names.append(f"np.{c.dtype.name}({float(c.reshape(-1)[0])!r})")
            else:
                names.append(f"t{i}")
        expr = _template(op).format(*names, zero=f"np.{dtype}(0.0)")
        lines.append(f"    t{j} = np.{dtype}({expr})")
    lines.append(f"    return t{len(composite.program) - 1}")
    return "\n".join(lines) + "\n"


def compile_kernel(composite, input_dtypes):
    """The Composite as a NumPy ufunc compiled by numba (cached in memory and on disk)."""
    source = kernel_source(composite, input_dtypes)
    out_dtype = composite.program[-1][2]
    signature = f"{out_dtype}({', '.join(input_dtypes)})"
    digest = hashlib.sha256((signature + "\n" + source).encode()).hexdigest()[:20]
    if digest in _LOADED:
        return _LOADED[digest]
    import numba  # lazy: importing numba takes seconds, and only this path needs it

    folder = cache_dir()
    path = os.path.join(folder, f"ck_{digest}.py")
    if not os.path.exists(path):  # never rewrite it: numba's cache is keyed on the file's timestamp
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source + f"\n\nSIGNATURE = {signature!r}\n")
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"coursekit_numba_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache locator looks the module up by name
    spec.loader.exec_module(module)
    ufunc = numba.vectorize([signature], nopython=True, cache=True)(module.element).ufunc
    _LOADED[digest] = ufunc
    return ufunc


def cache_dir() -> str:
    base = os.environ.get("COURSEKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "coursekit")
    folder = os.path.join(base, f"numba-kernels-py{sys.version_info[0]}{sys.version_info[1]}")
    os.makedirs(folder, exist_ok=True)
    return folder
