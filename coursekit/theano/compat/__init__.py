"""``theano.compat``: Theano's Python 2/3 helpers, as programs written for both imported them.

Only the names such programs use; on Python 3 each is the standard library's own (``izip`` is ``zip``).
coursekit itself is Python 3 only, so none of this is part of the library.
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict  # noqa: F401
from collections.abc import Callable, MutableMapping  # noqa: F401
from functools import partial  # noqa: F401

PY3 = True
string_types = (str,)
integer_types = (int,)
izip, imap, ifilter = zip, map, filter
unicode = str
long = int
xrange = range


def iteritems(mapping):
    return iter(mapping.items())


def decode(x):
    """bytes -> str (UTF-8); a str is returned as it is."""
    return x.decode() if isinstance(x, bytes) else x


class DefaultOrderedDict(OrderedDict):
    """An OrderedDict that fills a missing key with ``default_factory()`` (Theano's own helper)."""

    def __init__(self, default_factory=None, *args, **kwargs):
        if default_factory is not None and not callable(default_factory):
            raise TypeError(f"DefaultOrderedDict: default_factory must be callable, got {default_factory!r}")
        super().__init__(*args, **kwargs)
        self.default_factory = default_factory

    def __missing__(self, key):
        if self.default_factory is None:
            raise KeyError(key)
        self[key] = value = self.default_factory()
        return value
