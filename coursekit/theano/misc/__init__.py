"""``theano.misc`` compatibility (only what ported tutorial code imports)."""
