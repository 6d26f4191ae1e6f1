"""Running an op's ``xp`` code on the current GPU device (until ops declare it to one mechanism).

Ops written against an array module (``run(xp, inputs, output_storage)``)
get a ``gpu_perform`` that calls :func:`run_on_device`; placement wraps such
an op for a GPU device (``GpuCustomOp``) and runs it under that device, so
``current()`` here is the op's device: its inputs are unwrapped to ``xp``
arrays (NumPy buffers on the simulated GPU, CuPy arrays on a real one) and
its outputs wrapped back into device arrays.
"""
from __future__ import annotations


def run_on_device(run, inputs, output_storage):
    from ..devices import current  # devices plug in above the tensor layer

    device = current()
    backend = getattr(device, "backend", None) or device
    values = [backend.unwrap(v) if backend.is_device_array(v) else v for v in inputs]
    run(backend.xp, values, output_storage)
    for cell in output_storage:
        cell[0] = backend.wrap(cell[0])
