"""Global settings, Theano-style: ``coursekit.config.floatX`` and friends.

Settings come from three places, later ones winning:

1. the defaults below;
2. the environment variable ``COURSEKIT_FLAGS="device=cpu,floatX=float32"``
   (read once, at import);
3. assignment (``config.floatX = "float64"``) or, better, a temporary change::

       with coursekit.config.change(device="sim", floatX="float32"):
           ...

Theano could only pick its device once per process; being able to switch
inside one notebook is what lets a lesson compare CPU and GPU side by side.
Every value is validated when it is set, and an unknown flag or value is an
error that lists the valid ones.
"""
from __future__ import annotations

import contextlib
import os
import re

_DEVICE_RE = re.compile(r"^(cpu|gpu|sim|cuda(:\d+)?)$")


def _choice(*allowed):
    def check(name, value):
        if value not in allowed:
            raise ValueError(
                f"coursekit.config.{name}={value!r} is not valid; choose one of {', '.join(map(repr, allowed))}"
            )
        return value
    check.allowed = allowed
    return check


def _boolean(name, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"coursekit.config.{name}={value!r} is not valid; use True or False")


def _device(name, value):
    value = str(value).strip()
    if not _DEVICE_RE.match(value):
        raise ValueError(
            f"coursekit.config.device={value!r} is not valid; choose 'cpu', 'gpu' (real GPU if CuPy sees one, "
            "else the simulated GPU), 'cuda' or 'cuda:N' (a real GPU or an error), or 'sim' (always simulated)"
        )
    return value


_MODES = ("FAST_RUN", "FAST_COMPILE", "DebugMode")
_MODE_ALIASES = {"DEBUG_MODE": "DebugMode", "debug": "DebugMode"}


def _mode(name, value):
    value = _MODE_ALIASES.get(value, value)
    return _choice(*_MODES)(name, value)


# name -> (default, validator, one-line help)
_SPEC = {
    "device": ("cpu", _device, "where graphs run: cpu, gpu, cuda, cuda:N or sim"),
    "floatX": ("float32", _choice("float32", "float64", "float16"), "dtype of un-prefixed constructors"),
    "mode": ("FAST_RUN", _mode, "default compilation mode"),
    "allow_gc": (True, _boolean, "free intermediate buffers after each call"),
    "profile": (False, _boolean, "profile every compiled function and print a summary at exit"),
    "warn_float64": ("warn", _choice("warn", "raise", "ignore"), "what to do with float64 on a GPU device"),
    "on_opt_error": ("raise", _choice("raise", "warn", "ignore"), "what a failing graph rewrite does"),
}


class Config:
    """The settings object.  Attribute access is the API (``config.floatX``)."""

    def __init__(self):
        object.__setattr__(self, "_values", {k: v[0] for k, v in _SPEC.items()})

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"coursekit.config has no flag {name!r}; valid flags: {', '.join(_SPEC)}") from None

    def __setattr__(self, name, value):
        if name not in _SPEC:
            raise AttributeError(f"coursekit.config has no flag {name!r}; valid flags: {', '.join(_SPEC)}")
        self._values[name] = _SPEC[name][1](name, value)

    def __dir__(self):
        return list(_SPEC)

    def __repr__(self):
        return "coursekit.config(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    @contextlib.contextmanager
    def change(self, **flags):
        """Temporarily change flags: ``with config.change(device="sim"): ...``."""
        old = dict(self._values)
        try:
            for name, value in flags.items():
                setattr(self, name, value)
            yield self
        finally:
            self._values.clear()
            self._values.update(old)

    def describe(self):
        """A table of every flag, its value and what it means."""
        return "\n".join(f"{k:14} = {self._values[k]!r:12} {_SPEC[k][2]}" for k in _SPEC)

    def apply_flags(self, text, source="COURSEKIT_FLAGS"):
        """Apply ``"name=value,name=value"`` (the ``COURSEKIT_FLAGS`` syntax)."""
        for item in filter(None, (part.strip() for part in text.split(","))):
            if "=" not in item:
                raise ValueError(f"{source}: {item!r} is not of the form name=value (e.g. device=cpu,floatX=float32)")
            name, value = (s.strip() for s in item.split("=", 1))
            if name not in _SPEC:
                raise ValueError(f"{source}: unknown flag {name!r}; valid flags: {', '.join(_SPEC)}")
            try:
                setattr(self, name, value)
            except ValueError as exc:
                raise ValueError(f"{source}: {exc}") from None


config = Config()
config.apply_flags(os.environ.get("COURSEKIT_FLAGS", ""))
