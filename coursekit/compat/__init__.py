"""Modules that exist only because Theano programs import them by these names.

``coursekit.theano`` (the ``import theano`` alias) maps Theano paths that coursekit keeps elsewhere to
these modules: :mod:`.root` is ``theano`` itself (coursekit's top level plus the few Theano names the
course never needed), :mod:`.gof` is ``theano.gof`` / ``theano.gof.graph``.
"""
