"""``theano.compat.python2x`` (Theano 0.6-0.7): what Python 2.4-2.6 lacked, which Python 3 has.

Programs of that time wrote ``from theano.compat.python2x import OrderedDict`` (an LSTM library does).
"""
from __future__ import annotations

from collections import Counter, OrderedDict, defaultdict, deque  # noqa: F401
from functools import partial  # noqa: F401
from itertools import combinations, permutations, product  # noqa: F401
from sys import maxsize  # noqa: F401

from . import DefaultOrderedDict  # noqa: F401

any, all = any, all  # noqa: A001,PLW0127 - Python 2.4 had neither
