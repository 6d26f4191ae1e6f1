"""``theano.sandbox``: Theano's old GPU package and its MRG random streams, under the names programs import.

``theano.sandbox.cuda.basic_ops.gpu_from_host`` is :func:`coursekit.gpu_from_host`;
``theano.sandbox.rng_mrg.MRG_RandomStreams`` is :class:`coursekit.random.MRG_RandomStreams`.
"""
from . import cuda  # noqa: F401
