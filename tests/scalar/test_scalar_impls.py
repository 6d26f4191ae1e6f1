"""Every scalar op's NumPy impl must be right when ``out`` is one of its own inputs.

Fused elementwise code reuses dead temporaries as output buffers, so an impl
that writes into ``out`` before it has read all of its inputs gives wrong
answers only after fusion.  (softplus did, once.)
"""

import numpy as np
import pytest

from coursekit.scalar import ops as scalar


def _inputs(name, nin, rng):
    x = rng.standard_normal((5, 3)) * 3
    if name in ("log", "log1p", "sqrt", "pow"):
        x = np.abs(x) + 0.5
    args = [x] + [np.abs(rng.standard_normal((5, 3))) + 0.5 for _ in range(nin - 1)]
    if name == "switch":
        args = [x > 0] + args[1:]
    if name in ("and_", "or_", "invert", "xor"):
        args = [a.astype("int64") for a in args]
    return args


@pytest.mark.parametrize("name", scalar.all_names())
def test_impl_with_out_aliasing_an_input(name):
    op = scalar.get(name)
    for position in range(op.nin):
        args = _inputs(name, op.nin, np.random.default_rng(position))
        expected = np.asarray(op.impl(*[a.copy() for a in args]))
        if expected.dtype != args[position].dtype or expected.shape != args[position].shape:
            continue  # a buffer of another dtype is never reused for this op
        aliased = [a.copy() for a in args]
        result = op.impl(*aliased, out=aliased[position])
        np.testing.assert_allclose(result, expected, rtol=1e-12, err_msg=f"{name}, out aliasing input {position}")
