"""``theano.sandbox.softsign`` (before Theano 0.9 moved it to ``T.nnet``): :func:`coursekit.tensor.nnet.softsign`."""
from ...tensor.nnet import softsign  # noqa: F401
