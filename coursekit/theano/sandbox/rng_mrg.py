"""``theano.sandbox.rng_mrg``: :class:`coursekit.random.MRG_RandomStreams`."""
from ...random.streams import MRG_RandomStreams  # noqa: F401
