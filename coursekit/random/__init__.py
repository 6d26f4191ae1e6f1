"""Random numbers in graphs: ``RandomStreams`` (NumPy, host) and ``MRG_RandomStreams`` (MRG32k3a, any device).

Theano's import paths work too: ``coursekit.tensor.shared_randomstreams.RandomStreams`` and
``coursekit.sandbox.rng_mrg.MRG_RandomStreams``.
"""
from .streams import MRG_RandomStreams, RandomStreams  # noqa: F401
