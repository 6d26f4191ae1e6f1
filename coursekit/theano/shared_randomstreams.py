"""``theano.tensor.shared_randomstreams``: :class:`coursekit.random.RandomStreams`."""
from ..random.streams import RandomStreams  # noqa: F401
