"""Random numbers in graphs: ``RandomStreams`` (NumPy's RandomState, host) and ``MRG_RandomStreams`` (MRG31k3p, any
device), each giving Theano's numbers for a seed.

Theano's import paths (``theano.tensor.shared_randomstreams.RandomStreams``,
``theano.sandbox.rng_mrg.MRG_RandomStreams``) lead here through the alias, :mod:`coursekit.theano`.
"""
from .streams import MRG_RandomStreams, RandomStreams  # noqa: F401
