"""``theano.tensor.opt``: registering a rewrite by stage, Theano's way (:mod:`coursekit.rewriting.registration`)."""
from __future__ import annotations

from ..rewriting.registration import (local_optimizer, register_canonicalize, register_specialize,  # noqa: F401
                                      register_stabilize)
