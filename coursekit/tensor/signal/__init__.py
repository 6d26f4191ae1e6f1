"""``theano.tensor.signal``: pooling (``pool.pool_2d``; the older ``downsample.max_pool_2d``)."""
from . import downsample, pool  # noqa: F401
