"""Random numbers in graphs: ``RandomStreams`` (NumPy, host) and ``MRG_RandomStreams`` (MRG32k3a, any device).

Theano's import paths (``theano.tensor.shared_randomstreams.RandomStreams``,
``theano.sandbox.rng_mrg.MRG_RandomStreams``) lead here through the alias, :mod:`coursekit.theano`.
"""
from .streams import MRG_RandomStreams, RandomStreams  # noqa: F401
