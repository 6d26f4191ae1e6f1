"""``theano.sandbox.rng_mrg`` compatibility: see :mod:`coursekit.random`."""
from ..random.streams import MRG_RandomStreams  # noqa: F401
