"""``T.nnet.conv3d2d.conv3d``: Theano's 3-d convolution of movies, in its own axis order.

Theano computed it as a stack of 2-d convolutions; the arrays are ``signals`` (batch, time, channels,
rows, cols) and ``filters`` (n_filters, time, channels, rows, cols), and the filters are flipped in all
three dimensions (a true convolution).  Here it is one :class:`~.convnd.Conv3d` between two transposes,
so its gradients and GPU twin are that op's.
"""
from __future__ import annotations

from ..var import as_tensor_variable
from .convnd import Conv3d, padding


def conv3d(signals, filters, signals_shape=None, filters_shape=None, border_mode="valid"):
    """Output (batch, time, n_filters, rows, cols); ``border_mode``: 'valid', 'full' or a triple of them."""
    signals, filters = as_tensor_variable(signals), as_tensor_variable(filters)
    modes = border_mode if isinstance(border_mode, (tuple, list)) else (border_mode,) * 3
    if filters_shape is not None:
        kernel = (filters_shape[1], filters_shape[3], filters_shape[4])
    elif getattr(filters, "get_value", None) is not None:
        shape = filters.get_value(borrow=True).shape
        kernel = (shape[1], shape[3], shape[4])
    else:
        kernel = None
    if kernel is None and any(m != "valid" for m in modes):
        raise ValueError("conv3d2d.conv3d with a 'full' border mode needs filters_shape")
    pad = tuple(padding(m, (k,), (1,))[0] for m, k in zip(modes, kernel or (1, 1, 1)))
    op = Conv3d(pad, (1, 1, 1), True, (1, 1, 1))
    out = op(signals.dimshuffle(0, 2, 1, 3, 4), filters.dimshuffle(0, 2, 1, 3, 4))
    return out.dimshuffle(0, 2, 1, 3, 4)
