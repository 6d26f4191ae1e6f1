"""``theano.tensor.signal.downsample`` (Theano before 0.9): ``max_pool_2d(input, ds, ignore_border)``."""
from .pool import pool_2d


def max_pool_2d(input, ds, ignore_border=None, st=None, padding=(0, 0), mode="max"):
    return pool_2d(input, ws=ds, ignore_border=ignore_border, stride=st, pad=padding, mode=mode)
