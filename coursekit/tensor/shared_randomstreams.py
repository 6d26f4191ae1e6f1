"""``theano.tensor.shared_randomstreams`` compatibility: see :mod:`coursekit.random`."""
from ..random.streams import RandomStreams  # noqa: F401
