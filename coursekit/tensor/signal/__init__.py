"""``theano.tensor.signal``: pooling (``pool.pool_2d``; Theano 0.8's ``downsample.max_pool_2d`` is in the alias, :mod:`coursekit.theano.downsample`)."""
from . import pool  # noqa: F401
