"""``theano.sandbox.cuda`` compatibility: see :mod:`coursekit.devices`."""
from . import basic_ops  # noqa: F401
