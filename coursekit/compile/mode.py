"""Compilation modes: which graph rewrites run before linking.

A mode is a query over the rewrite database (see :mod:`coursekit.rewriting`):
``FAST_RUN`` applies every stage, ``FAST_COMPILE`` almost none, and
``DebugMode`` runs the unrewritten graph beside the rewritten one and
compares them.
"""
from __future__ import annotations


class Mode:
    """A named set of rewrite stages to apply."""

    def __init__(self, name, stages, include=(), exclude=()):
        self.name, self.stages = name, tuple(stages)
        self.include, self.exclude = tuple(include), tuple(exclude)

    def rewrite(self, fgraph):
        from ..rewriting import apply_stages

        apply_stages(fgraph, self)

    def including(self, *tags):
        return Mode(self.name, self.stages, self.include + tags, self.exclude)

    def excluding(self, *tags):
        return Mode(self.name, self.stages, self.include, self.exclude + tags)

    def __repr__(self):
        return f"Mode({self.name})"


ALL_STAGES = ("canonicalize", "stabilize", "specialize", "fusion", "placement", "transfer")
MODES = {
    "FAST_RUN": Mode("FAST_RUN", ALL_STAGES),
    "FAST_COMPILE": Mode("FAST_COMPILE", ("placement", "transfer")),
}


def get_mode(mode):
    """A Mode from None (config.mode), a name, or a Mode instance."""
    from ..config import config

    if isinstance(mode, Mode):
        return _with_config_tags(mode)
    name = mode or config.mode
    if name in ("DebugMode", "DEBUG_MODE"):
        from ..debugmode import DebugMode

        return DebugMode()
    if mode is None and name == "FAST_RUN" and config.optimizer in ("fast_compile", "merge", "None", "o1"):
        name = "FAST_COMPILE"  # Theano's optimizer flag chooses the rewrites of the default mode
    try:
        return _with_config_tags(MODES[name])
    except KeyError:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(list(MODES) + ['DebugMode'])}") from None


def _with_config_tags(mode):
    """Theano's ``optimizer_excluding``/``optimizer_including`` flags (names or tags, ':'-separated)."""
    from ..config import config

    exclude = tuple(t for t in config.optimizer_excluding.split(":") if t)
    include = tuple(t for t in config.optimizer_including.split(":") if t)
    if exclude:
        mode = mode.excluding(*exclude)
    if include:
        mode = mode.including(*include)
    return mode
