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

Since issue 17 there is a second form, the *loop kernel* (:func:`loop_wrapper`), for
Composites over vectors (every input either the full vector or one broadcast value): a
plain ``for`` loop compiled with ``numba.njit``.  Unlike a numba ufunc's strided inner loop,
LLVM vectorises it, and ``exp``/``log``/``log1p`` in float32 come from ``numba_math.py``
(vectorisable polynomials, within 3 ulp of NumPy), so transcendental chains win too:
W1's ``exp`` of 230400 float32 in about 0.85x NumPy's time, W3's fused steps in a few
microseconds.  It is compiled lazily, on the first call, and cached on disk.

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


# --------------------------------------------------------------------------------------------
# Loop kernels: one njit loop over vectors (transcendental steps included)
# --------------------------------------------------------------------------------------------
# dtype -> element template; float32 transcendentals are numba_math's vectorisable versions
LOOP_MATH = {
    "exp": {"float32": "exp32({0})", "float64": "math.exp({0})"},
    "log": {"float32": "log32({0})", "float64": "math.log({0})"},
    "log1p": {"float32": "log1p32({0})", "float64": "math.log1p({0})"},
    "sigmoid": {"float32": "np.float32(1.0) / (np.float32(1.0) + exp32(-{0}))",
                "float64": "1.0 / (1.0 + math.exp(-{0}))"},
    "softplus": {"float32": "({0} if {0} > np.float32(30.0) else log1p32(exp32({0})))",
                 "float64": "({0} if {0} > 30.0 else math.log1p(math.exp({0})))"},
    "sqrt": {"float32": "math.sqrt({0})", "float64": "math.sqrt({0})"},
}
LOOP_COMPARE = {"gt": "({0} > {1})", "lt": "({0} < {1})", "ge": "({0} >= {1})", "le": "({0} <= {1})",
                "eq": "({0} == {1})", "neq": "({0} != {1})"}
LOOP_OPS = frozenset(TEMPLATES) | frozenset(LOOP_MATH) | frozenset(LOOP_COMPARE)


def loop_modes(input_types, output_type):
    """Per input, 'a' (a whole vector) or 's' (one broadcast value), or None when the node is
    not a vector loop (another rank, or an input broadcast along some axes only)."""
    if output_type.ndim != 1 or output_type.dtype not in FLOAT_DTYPES + ("bool",):
        return None
    modes = []
    for t in input_types:
        if t.dtype not in FLOAT_DTYPES or t.ndim not in (0, 1):
            return None
        modes.append("s" if all(t.broadcastable) else "a")
    return tuple(modes) if "a" in modes else None


def supports_loop(composite, modes) -> bool:
    """Can this Composite run as a loop kernel over inputs laid out as ``modes``?"""
    if modes is None or any(c.dtype.name not in FLOAT_DTYPES for c in composite.constants):
        return False
    for op, _, dtype in composite.program:
        name = _loop_name(op)
        if name not in LOOP_OPS or (dtype not in FLOAT_DTYPES and name not in LOOP_COMPARE):
            return False
    return True


def _loop_name(op):
    return "second" if op.name in ("cast{float32}", "cast{float64}") else op.name


def loop_source(composite, input_dtypes, modes) -> str:
    """The kernel: ``kernel(i0, ..., out)`` looping over ``out``; each step rounded to its dtype."""
    args = [f"i{i}" for i in range(len(input_dtypes))]
    lines = ["import math", "", "import numpy as np", "",
             "from coursekit.scalar.numba_math import exp32, log1p32, log32", "", "",
             f"def kernel({', '.join(args)}, out):", "    n = out.shape[0]"]
    for i, mode in enumerate(modes):
        if mode == "a":
            lines += [f"    if i{i}.shape[0] != n:", "        raise ValueError('inputs of different lengths')"]
        else:
            lines.append(f"    s{i} = i{i}.item()")
    lines.append("    for k in range(n):")
    for j, (op, refs, dtype) in enumerate(composite.program):
        names = []
        for kind, i in refs:
            if kind == "in":
                names.append(f"i{i}[k]" if modes[i] == "a" else f"s{i}")
            elif kind == "const":
                c = composite.constants[i]
                names.append(f"np.{c.dtype.name}({float(c.reshape(-1)[0])!r})")
            else:
                names.append(f"t{i}")
        name = _loop_name(op)
        if op.name.startswith("cast{"):
            expr = names[0]
        elif name in LOOP_MATH:
            expr = LOOP_MATH[name][dtype].format(*names)
        elif name in LOOP_COMPARE:
            expr = LOOP_COMPARE[name].format(*names)
        else:
            expr = TEMPLATES[name].format(*names, zero=f"np.{dtype}(0.0)")
        kind = "np.bool_" if dtype == "bool" else f"np.{dtype}"
        lines.append(f"        t{j} = {kind}({expr})")
    lines.append(f"        out[k] = t{len(composite.program) - 1}")
    return "\n".join(lines) + "\n"


def loop_wrapper(composite, input_dtypes, modes, numpy_impl):
    """(``fused(*inputs, out=None)``, ``strict(*inputs, out)``) running the loop kernel, which is
    compiled on its first call.

    ``strict`` is the thunk's fast path: it raises ``ValueError`` for inputs it cannot loop
    over (a length that differs: broadcasting, or an error), and the Elemwise thunk then takes
    its usual path, which checks the broadcast and lets NumPy compute or say what is wrong.
    ``fused`` is the Composite's ``impl`` for everyone else: it falls back to ``numpy_impl``.
    ``out`` is written when it has the right length, otherwise a new buffer is returned."""
    source = loop_source(composite, input_dtypes, modes)
    out_dtype = np.dtype(composite.program[-1][2])
    first_array = modes.index("a")
    args = ", ".join(f"i{i}" for i in range(len(modes)))
    ns = {"empty": np.empty, "dtype": out_dtype, "numpy_impl": numpy_impl}

    def load(*call_args):
        ns["kernel"] = _load_loop_kernel(source)
        return ns["kernel"](*call_args)

    ns["kernel"] = load
    code = (f"def strict({args}, out):\n"
            f"    if out is None or out.shape != i{first_array}.shape:\n"
            f"        out = empty(i{first_array}.shape, dtype)\n"
            f"    kernel({args}, out)\n"
            f"    return out\n\n\n"
            f"def fused({args}, out=None):\n"
            f"    try:\n"
            f"        return strict({args}, out)\n"
            f"    except ValueError:\n"
            f"        return numpy_impl({args}) if out is None else numpy_impl({args}, out=out)\n")
    exec(compile(code, "<coursekit numba loop wrapper>", "exec"), ns)
    ns["fused"].kernel_source = source
    return ns["fused"], ns["strict"]


def _load_loop_kernel(source):
    import numba  # lazy: importing numba takes a quarter of a second

    from . import numba_math

    math_digest = hashlib.sha256(open(numba_math.__file__, "rb").read()).hexdigest()[:12]
    digest = hashlib.sha256((math_digest + "\n" + source).encode()).hexdigest()[:20]
    if digest in _LOADED:
        return _LOADED[digest]
    module = _cached_module(f"ck_loop_{digest}", source)
    kernel = numba.njit(cache=True, error_model="numpy", nogil=True)(module.kernel)
    _LOADED[digest] = kernel
    return kernel


def _cached_module(stem, source):
    """Import ``source`` from a file in the cache folder (numba's disk cache needs a real file)."""
    path = os.path.join(cache_dir(), f"{stem}.py")
    if not os.path.exists(path):  # never rewrite it: numba's cache is keyed on the file's timestamp
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"coursekit_numba_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache locator looks the module up by name
    spec.loader.exec_module(module)
    return module
