"""Compiling graphs into callables: shared variables, ``function``, modes."""
from .function import MissingInputError, UnusedInputError, function  # noqa: F401
from .io import In, Out  # noqa: F401
from .mode import Mode, get_mode  # noqa: F401
from .sharedvalue import SharedVariable, shared  # noqa: F401
