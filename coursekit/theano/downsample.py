"""``theano.tensor.signal.downsample`` (Theano before 0.9): ``max_pool_2d(input, ds, ignore_border)``.

coursekit's own name is :func:`coursekit.tensor.signal.pool.pool_2d` (Theano 0.9's), which this calls.
"""
from ..tensor.signal.pool import pool_2d


def max_pool_2d(input, ds, ignore_border=None, st=None, padding=(0, 0), mode="max"):
    """Theano 0.8's pooling: ``ds`` is the window, ``st`` the stride, ``padding`` the zero padding."""
    return pool_2d(input, ws=ds, ignore_border=ignore_border, stride=st, pad=padding, mode=mode)
