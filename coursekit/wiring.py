"""Extension points: the few places where a lower layer calls a higher one.

Imports flow one way (``tests/test_layering.py``).  A handful of Theano
conveniences still need a layer above the one they live in: ``x.eval()``
compiles a function, ``x.transfer('gpu')`` inserts a device op, a profile
renders itself through ``printing``.  Such code asks for a *role* here
(``wiring.get("compile_function")``) and never names the module that plays it;
the package facade, ``coursekit/__init__.py`` -- the top of the stack, the one
place allowed to know every layer -- says which module plays each role
(:func:`provide`).  Nothing is imported until a role is first used, so
``import coursekit.course`` or ``import coursekit.cuda`` pays for none of it.

This module imports nothing from coursekit: every layer may use it.
"""
from __future__ import annotations

import importlib

_PROVIDERS: dict = {}   # role -> "package.module:attribute" (relative to coursekit)
_RESOLVED: dict = {}    # role -> the object, once imported


def provide(role, target):
    """Say which ``"module:attribute"`` (relative to ``coursekit``; a module alone: ``"module"``) plays ``role``."""
    _PROVIDERS[role] = target
    _RESOLVED.pop(role, None)


def get(role):
    """The object playing ``role``, imported on first use."""
    try:
        return _RESOLVED[role]
    except KeyError:
        pass
    try:
        target = _PROVIDERS[role]
    except KeyError:
        raise LookupError(f"coursekit.wiring: no provider for {role!r} (coursekit/__init__.py wires them; "
                          f"known roles: {', '.join(sorted(_PROVIDERS))})") from None
    module, _, attribute = target.partition(":")
    value = importlib.import_module(f"coursekit.{module}")
    if attribute:
        value = getattr(value, attribute)
    _RESOLVED[role] = value
    return value


def roles():
    """role -> provider, for tests and for the curious."""
    return dict(_PROVIDERS)
