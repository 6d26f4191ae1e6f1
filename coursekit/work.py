"""What an op costs, in hardware-independent counts: bytes, FLOPs, kernel launches.

An op says how much *work* one application does with a ``work`` method::

    def work(self, node, shapes, dtypes) -> Work

``shapes`` and ``dtypes`` are those of ``node.inputs`` at run time (the op
knows its own output shapes from them).  The cost model of a GPU
(:mod:`coursekit.costmodel`) turns a :class:`Work` into seconds;
nothing here knows about any particular GPU, so the counts can be checked
by hand and tested exactly.

Ops that declare nothing get :func:`default_work`: a view (an op with a
``view_map`` and no ``destroy_map``) moves no bytes and launches nothing; any
other op reads its inputs once, writes an output as large as its largest
input, in one launch.  A custom op whose kernel does something else should
declare its own ``work`` (see ``docs/adding-an-op.md``).

This module imports nothing from coursekit, so every op module may use it.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class Work(NamedTuple):
    """The work of one application of an op (one call of its thunk).

    ``threads``: independent work items for wave quantisation (one per output
    element for elementwise code); ``matrix``: the output's (rows, columns)
    for a matrix product, whose kernels compute output *tiles*, one thread
    block each; ``threads`` 0 and ``matrix`` empty when not a kernel.
    ``dtype``: the dtype of the arithmetic (which peak FLOP/s applies).
    ``h2d_bytes`` / ``d2h_bytes``: bytes over the host link (transfers only).
    """

    flops: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    launches: int = 1
    threads: int = 0
    matrix: tuple = ()
    dtype: str = "float32"
    h2d_bytes: int = 0
    d2h_bytes: int = 0

    @property
    def bytes(self):
        """Device-memory traffic (read + written)."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self):
        """FLOPs per byte of device-memory traffic (the roofline's x axis); 0 when nothing moves."""
        return self.flops / self.bytes if self.bytes else 0.0


NO_WORK = Work(launches=0)

# FLOPs counted per element for one scalar op.  A transcendental runs as a short sequence on the
# special-function units; counting it as 8 keeps exp/tanh heavier than add without pretending to a
# precision no public datasheet gives.  Elementwise GPU code is memory-bound either way.
TRANSCENDENTAL_FLOPS = 8
_TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "tanh", "sqrt", "sin", "cos", "pow", "sigmoid", "softplus",
                   "true_div", "int_div", "mod"}
_FREE = {"identity", "second"}


def elements(shape):
    return int(math.prod(shape)) if shape is not None else 1


def nbytes(shape, dtype):
    """Bytes of an array; 0 for values that are not arrays (a random generator, a Python object)."""
    try:
        return elements(shape) * np.dtype(dtype).itemsize
    except TypeError:
        return 0


def scalar_flops(scalar_op):
    """FLOPs per element of a scalar op; a fused ``Composite`` counts every step of its program."""
    program = getattr(scalar_op, "program", None)
    if program is not None:
        return sum(scalar_flops(step[0]) for step in program)
    name = getattr(scalar_op, "name", "")
    if name in _FREE or name.startswith("cast"):
        return 0
    return TRANSCENDENTAL_FLOPS if name in _TRANSCENDENTAL else 1


def broadcast_shape(shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes if s is not None]))
    except ValueError:
        return max((tuple(s) for s in shapes if s is not None), key=elements, default=())


def elementwise_work(scalar_op, shapes, dtypes, out_dtype):
    """One kernel: read every input once (broadcast inputs at their own size), write the output."""
    out = broadcast_shape(shapes)
    n = elements(out)
    return Work(flops=n * scalar_flops(scalar_op),
                bytes_read=sum(nbytes(s, d) for s, d in zip(shapes, dtypes)),
                bytes_written=nbytes(out, out_dtype), threads=n, dtype=out_dtype)


def reduction_work(shape, dtype, out_dtype, axis):
    """Read the input once, one operation per element, write the reduced output."""
    n = elements(shape)
    kept = [s for i, s in enumerate(shape or ()) if i not in axis]
    return Work(flops=n, bytes_read=nbytes(shape, dtype), bytes_written=nbytes(kept, out_dtype),
                threads=n, dtype=out_dtype)


def matmul_dims(x_shape, y_shape):
    """(m, k, n) of ``dot(x, y)`` for vectors and matrices (a vector is a 1-row / 1-column matrix)."""
    m, k = (1, x_shape[0]) if len(x_shape) == 1 else x_shape
    n = 1 if len(y_shape) == 1 else y_shape[1]
    return int(m), int(k), int(n)


def matmul_work(x_shape, y_shape, dtype, z_shape=None, scale=False):
    """``dot`` (or GEMM/GEMV with ``z_shape``): 2·m·k·n FLOPs, read x, y (and z), write m·n.

    ``scale``: a GEMM's ``alpha·xy + beta·z`` adds 2 FLOPs per output element.
    The output's (m, n) gives the matrix product its wave quantisation (tiles).
    """
    m, k, n = matmul_dims(x_shape, y_shape)
    size = np.dtype(dtype).itemsize
    read = (elements(x_shape) + elements(y_shape) + (elements(z_shape) if z_shape is not None else 0)) * size
    return Work(flops=2.0 * m * k * n + (2.0 * m * n if scale else 0.0), bytes_read=read,
                bytes_written=m * n * size, matrix=(m, n), dtype=dtype)


def transfer_work(shape, dtype, to_device):
    """A copy over the host link: no kernel, ``nbytes`` one way."""
    n = nbytes(shape, dtype)
    return Work(launches=0, h2d_bytes=n if to_device else 0, d2h_bytes=0 if to_device else n, dtype=dtype)


def default_work(node, shapes, dtypes):
    """For ops that declare no ``work``: views are free; anything else reads all, writes one output."""
    op = node.op
    if getattr(op, "view_map", None) and not getattr(op, "destroy_map", None):
        return NO_WORK
    if getattr(op, "is_transfer", False) and shapes:  # a transfer op that declares nothing: one copy
        to_device = getattr(node.outputs[0].type, "device", None) is not None  # a GpuArrayType names its device
        return transfer_work(shapes[0], dtypes[0], to_device)
    sizes = [nbytes(s, d) for s, d in zip(shapes, dtypes)]
    largest = max(range(len(sizes)), key=sizes.__getitem__, default=None)
    out_bytes = sizes[largest] if largest is not None else 0
    out_dtype = str(getattr(node.outputs[0].type, "dtype", "float32")) if node.outputs else "float32"
    n = elements(shapes[largest]) if largest is not None else 0
    return Work(bytes_read=sum(sizes), bytes_written=out_bytes * max(len(node.outputs), 1), threads=n,
                dtype=out_dtype)


def work_of(node, shapes, dtypes):
    """The op's own declaration, else its wrapped CPU op's (``cpu_op``), else :func:`default_work`."""
    op = node.op
    declared = getattr(op, "work", None)
    if declared is None:
        inner = getattr(op, "cpu_op", None)
        declared = getattr(inner, "work", None) if inner is not None else None
    if declared is None:
        return default_work(node, shapes, dtypes)
    work = declared(node, shapes, dtypes)
    if not isinstance(work, Work):
        raise TypeError(f"{op}.work() returned {type(work).__name__}; it must return a coursekit.work.Work "
                        "(bytes read and written, FLOPs, launches)")
    return work
