"""Every scalar op's generated C expression computes what its NumPy implementation computes.

Only a real GPU runs these expressions in the library (a fused elementwise
graph becomes one CUDA kernel), so here the very kernels that the nvcc test
compiles (``standalone_kernel_source``) are compiled by g++ into a small
harness that runs each kernel once per element, on awkward values: negative
and mixed-sign integers, zeros, NaN and infinities, in float32, float64,
int32 and int64.  The same kernels also run through the CUDA emulator (``cuda.SourceModule``,
which nvcc compile-checks first where it is installed: nvcc rejected ``exp(int)``, which g++ accepts),
and a gpu-marked twin runs the cases through CuPy.

Differences that are allowed, and why:

* transcendental functions (exp, tanh, ...) may differ by a few ulps between
  C's math library and NumPy's, so they compare with a relative tolerance of
  a few ulps; sigmoid's NumPy form (through tanh) has an absolute error of
  up to 6e-8 in float32, so sigmoid compares with that absolute tolerance;
  everything else (arithmetic, //, %, comparisons, casts) compares exactly;
* integer overflow and float -> int casts of NaN/inf are left out: NumPy
  warns, C leaves them undefined.
"""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import cupy_standin

import coursekit.devices as devices
import coursekit.tensor  # noqa: F401  (registers the tensor layer's own table rows, e.g. Theano's arccos and erf,
#                          so the cases are every row whichever test module happened to import it first)
from coursekit import cuda
from coursekit.scalar.cuda_codegen import PRELUDE, kernel_name, standalone_kernel_source
from coursekit.scalar import ops as scalar
from coursekit.scalar.ops import c_type

INTS = np.array([-7, 7, -8, 8, 0, 1, -1, 2, -2, 3, -3, 13, -13, 100], dtype=np.int64)
FLOATS = np.array([-7.5, 7.5, -2.0, 2.0, 0.0, -0.0, 0.5, -0.5, 1e-3, 3.25, -3.25, 40.0, -40.0,
                   np.nan, np.inf, -np.inf], dtype=np.float64)
DTYPES = ["float32", "float64", "int32", "int64"]
# ops that are not defined on every dtype in NumPy, or where the C and NumPy domains differ on purpose
SKIP = {("and_", "f"), ("or_", "f"), ("invert", "f"), ("xor", "f")}  # bitwise: integers only


def _operands(nin, dtype):
    """Every combination of the sample values (for binary ops: each value against each value)."""
    values = (INTS if dtype.startswith("int") else FLOATS).astype(dtype)
    if nin == 1:
        return [values]
    a, b = np.meshgrid(values, values, indexing="ij")
    pairs = [a.ravel(), b.ravel()]
    if nin == 3:  # switch: condition, then the two choices
        return [(a.ravel() > 0), a.ravel(), b.ravel()]
    return pairs


def _cases():
    cases = []
    for name in scalar.all_names():
        op = scalar.get(name)
        for dtype in DTYPES:
            if (name, dtype[0]) in SKIP:
                continue
            cases.append((name, op, dtype))
    for target in ("int32", "float32", "float64", "bool"):
        for dtype in DTYPES:
            cases.append((f"cast{{{target}}}", scalar.Cast(target), dtype))
    return cases


CASES = _cases()


def _input_dtypes(op, dtype):
    return ["bool", dtype, dtype] if op.nin == 3 else [dtype] * op.nin


HARNESS_PRELUDE = """
#include <math.h>
#include <cmath>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
struct ck_index { unsigned int x; };
static ck_index threadIdx = {0}, blockIdx = {0}, blockDim = {1};
"""


def _kernels_source():
    """Every case's standalone kernel, renamed case_K, after one copy of the prelude."""
    parts = [PRELUDE]
    for k, (name, op, dtype) in enumerate(CASES):
        dtypes = _input_dtypes(op, dtype)
        src = standalone_kernel_source(op, dtypes, op.output_dtype(*dtypes))
        parts.append(src.replace(PRELUDE, "").replace(kernel_name(op) + "(", f"case_{k}("))
    return "\n".join(parts)


def _harness_source():
    """Each case's standalone kernel, plus a C driver that runs it for every element."""
    parts = [HARNESS_PRELUDE, PRELUDE]
    for k, (name, op, dtype) in enumerate(CASES):
        dtypes = _input_dtypes(op, dtype)
        out_dtype = op.output_dtype(*dtypes)
        src = standalone_kernel_source(op, dtypes, out_dtype)
        parts.append(src.replace(PRELUDE, "").replace(kernel_name(op) + "(", f"case_{k}("))
        casts = [f"(const {c_type(d)}*)ptrs[{j}]" for j, d in enumerate(dtypes)]
        casts.append(f"({c_type(out_dtype)}*)ptrs[{len(dtypes)}]")
        parts.append(f'extern "C" void run_{k}(void **ptrs, long long n) {{\n'
                     f"    for (long long i = 0; i < n; ++i) {{ threadIdx.x = (unsigned int)i; "
                     f"case_{k}({', '.join(casts)}, n); }}\n}}\n")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """ONE shared library holding every (op, dtype) kernel: one g++ run for the whole test."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler ({cxx}) to build the harness")
    folder = tmp_path_factory.mktemp("c_expressions")
    (folder / "cases.cpp").write_text(_harness_source())
    result = subprocess.run([cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-o", str(folder / "cases.so"),
                             str(folder / "cases.cpp")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return ctypes.CDLL(str(folder / "cases.so"))


def run_case(harness, k, args, out):
    arrays = [np.ascontiguousarray(a) for a in args] + [out]
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    getattr(harness, f"run_{k}")(ptrs, ctypes.c_longlong(out.size))


def _case_values(k):
    name, op, dtype = CASES[k]
    args = _operands(op.nin, dtype)
    if name == "pow" and dtype.startswith("int"):
        args[1] = np.abs(args[1]) % 4  # NumPy refuses negative integer powers; big ones overflow
    if name == "reciprocal" and dtype.startswith("int"):
        args = [np.where(a == 0, 1, a) for a in args]  # 1 / 0 in integers: C leaves it undefined, NumPy warns
    if name.startswith("cast{int") and dtype.startswith("float"):
        args = [np.nan_to_num(a, nan=0, posinf=0, neginf=0) for a in args]  # undefined in C
    with np.errstate(all="ignore"):
        expected = np.asarray(op.impl(*args))
    return name, args, expected


def _mismatches(name, args, out, expected):
    if expected.dtype.kind == "f" and name == "sigmoid":
        close = np.isclose(out, expected, rtol=0, atol=6e-8 if expected.dtype == np.float32 else 4e-16,
                           equal_nan=True)
    elif expected.dtype.kind == "f" and name in TRANSCENDENTAL:
        close = np.isclose(out, expected, rtol=4e-7 if expected.dtype == np.float32 else 1e-14, atol=0,
                           equal_nan=True)
    elif expected.dtype.kind == "f":
        close = (out == expected) | (np.isnan(out) & np.isnan(expected))
    else:
        close = out == expected
    return [f"{name}({', '.join(repr(a[i].item()) for a in args)}) = {out[i]!r} in C, {expected[i]!r} in NumPy"
            for i in np.flatnonzero(~close)]


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{n}-{d}" for n, _, d in CASES])
def test_c_expression_matches_numpy(harness, k):
    name, args, expected = _case_values(k)
    out = np.zeros(expected.size, dtype=expected.dtype)
    run_case(harness, k, args, out)
    bad = _mismatches(name, args, out, expected)
    assert not bad, "; ".join(bad[:6])


def test_c_expressions_match_numpy_through_the_emulator():
    """The kernels as CUDA source for the emulator: one module, one launch per case, In/Out buffers."""
    module = cuda.SourceModule(_kernels_source(), backend="emulator")
    failures = []
    for k in range(len(CASES)):
        name, args, expected = _case_values(k)
        out = np.zeros(expected.size, dtype=expected.dtype)
        module.get_function(f"case_{k}")(*[cuda.In(np.ascontiguousarray(a)) for a in args], cuda.Out(out),
                                         np.int64(out.size), block=(256, 1, 1), grid=(-(-out.size // 256), 1))
        failures += [f"{CASES[k][2]}: {m}" for m in _mismatches(name, args, out, expected)[:2]]
    assert not failures, "; ".join(failures[:12])


@pytest.mark.parametrize("where", [cupy_standin.cuda_case()])
def test_generated_cuda_kernels_match_numpy_on_the_gpu(where):
    """The same cases as ONE ``cupy.ElementwiseKernel`` each, through CuPy's code path (what a fused graph
    runs): on a real GPU where CuPy sees one, else on the CuPy stand-in, which compiles each kernel's CUDA C
    (nvcc's verdict where nvcc is installed, g++ for the emulator) and runs it on the emulator."""
    with cupy_standin.on(where):
        device = devices.get("cuda:0")
        failures = []
        for k, (name, op, dtype) in enumerate(CASES):
            _, args, expected = _case_values(k)
            kernel = device.elementwise(op, _input_dtypes(op, dtype), expected.dtype.name)
            out = device.to_host(kernel(*[device.to_device(a) for a in args]))
            failures += _mismatches(name, args, out, expected)[:2]
    assert not failures, "; ".join(failures[:12])


TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "sigmoid", "softplus", "pow", "sqrt",
                  "arccos", "arcsin", "arctan", "arctan2", "cosh", "sinh", "tan", "erf", "erfc", "exp2", "log2", "log10"}


def test_the_reported_cases(harness):
    """The two values of the bug report, by name: int32 -7 // 2 is -4 and float -7.5 % 2 is 0.5."""
    k_div = next(k for k, (n, _, d) in enumerate(CASES) if (n, d) == ("int_div", "int32"))
    k_mod = next(k for k, (n, _, d) in enumerate(CASES) if (n, d) == ("mod", "float64"))
    q, r = np.zeros(1, np.int32), np.zeros(1, np.float64)
    run_case(harness, k_div, [np.int32([-7]), np.int32([2])], q)
    run_case(harness, k_mod, [np.float64([-7.5]), np.float64([2.0])], r)
    assert (q[0], r[0]) == (-7 // 2, -7.5 % 2) == (-4, 0.5)


def test_a_fused_chain_over_integers_compiles_and_matches_numpy_through_the_emulator():
    """A Composite's temporaries keep their dtypes: sqrt and exp of an int16 input compute in float32 (as
    NumPy does), and the chain stays on the GPU device."""
    import coursekit as theano
    import coursekit.tensor as T
    from coursekit.devices.gpu_ops import GpuElemwise

    x = T.vector("x", dtype="int16")
    with theano.config.change(device="sim"):
        f = theano.function([x], T.sqrt(x * x + 1) * np.float32(3) + T.exp(-abs(x)) + x // 2)
    (node,) = [n for n in f.toposort() if isinstance(n.op, GpuElemwise)]
    dtypes, out_dtype = [i.type.dtype for i in node.inputs], node.outputs[0].type.dtype
    assert dtypes == ["int16"] and out_dtype == "float32" and "Composite" in str(node.op)
    source = standalone_kernel_source(node.op.scalar_op, dtypes, out_dtype)
    values = INTS.astype(np.int16)
    out = np.zeros(values.size, np.float32)
    cuda.SourceModule(source, backend="emulator").get_function(kernel_name(node.op.scalar_op))(
        cuda.In(values), cuda.Out(out), np.int64(values.size), block=(32, 1, 1))
    np.testing.assert_allclose(out, f(values), rtol=4e-7)
