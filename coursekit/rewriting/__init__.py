"""Graph rewrites: small named functions, registered in stages.

A *local* rewrite looks at one Apply node and either returns ``None`` (not
applicable) or a list of replacement variables, one per output of the node.
A *global* rewrite looks at the whole graph (merge, fusion, GPU placement)
and returns how many changes it made.  Rewrites are registered in stages
that run in this order::

    canonicalize -> stabilize -> specialize -> fusion -> placement -> transfer

and carry tags; a mode is a query over stages and tags (``FAST_RUN`` runs
everything, ``FAST_COMPILE`` only what is needed to run at all).

Every rewrite that fires is logged in ``fgraph.rewrite_log`` so lessons and
tests can show exactly what the compiler did.  A rewrite that raises stops
compilation with a message naming it (``config.on_opt_error`` can turn that
into a warning).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

STAGES = ("canonicalize", "stabilize", "specialize", "fusion", "placement", "transfer")
MAX_PASSES = 30


class RewriteError(RuntimeError):
    """A registered rewrite raised while compiling a function."""


@dataclass
class Rewrite:
    name: str
    stage: str
    fn: object
    kind: str  # "local" or "global"
    tags: tuple = field(default_factory=tuple)


_DB: dict = {stage: [] for stage in STAGES}


def _register(kind, stage, tags, name):
    if stage not in _DB:
        raise ValueError(f"unknown rewrite stage {stage!r}; stages are {STAGES}")

    def decorator(fn):
        rw = Rewrite(name or fn.__name__, stage, fn, kind, tuple(tags))
        _DB[stage] = [r for r in _DB[stage] if r.name != rw.name] + [rw]
        fn.rewrite = rw
        return fn

    return decorator


def local_rewrite(stage, *tags, name=None):
    """Register ``fn(fgraph, node) -> list of replacements | None`` in ``stage``."""
    return _register("local", stage, tags, name)


def global_rewrite(stage, *tags, name=None):
    """Register ``fn(fgraph) -> number of changes`` in ``stage``."""
    return _register("global", stage, tags, name)


def registered(stage=None):
    """The registered rewrites (of one stage, or all), for display and tests."""
    stages = [stage] if stage else STAGES
    return [r for s in stages for r in _DB[s]]


def _selected(rw, mode):
    if rw.name in mode.exclude or any(t in mode.exclude for t in rw.tags):
        return False
    return True


def apply_stages(fgraph, mode):
    """Run the stages that ``mode`` asks for, each to a fixed point."""
    _load_rewrite_modules()
    if not hasattr(fgraph, "rewrite_log"):
        fgraph.rewrite_log = []
    for stage in STAGES:
        if stage not in mode.stages and not any(t == stage for t in mode.include):
            continue
        rewrites = [rw for rw in _DB[stage] if _selected(rw, mode)]
        run_stage(fgraph, stage, rewrites)
    return fgraph


def run_stage(fgraph, stage, rewrites):
    local = [rw for rw in rewrites if rw.kind == "local"]
    global_ = [rw for rw in rewrites if rw.kind == "global"]
    for _ in range(MAX_PASSES):
        changed = 0
        for rw in global_:
            changed += _guard(rw, fgraph, None, lambda rw=rw: rw.fn(fgraph) or 0)
        if local:
            changed += _local_pass(fgraph, stage, local)
        if not changed:
            return
    warnings.warn(f"rewrite stage {stage} did not settle after {MAX_PASSES} passes", stacklevel=2)


def _local_pass(fgraph, stage, local):
    changed = 0
    for node in fgraph.toposort():
        if node not in fgraph.apply_nodes:
            continue
        for rw in local:
            replacements = _guard(rw, fgraph, node, lambda rw=rw: rw.fn(fgraph, node))
            if not replacements:
                continue
            if len(replacements) != len(node.outputs):
                raise RewriteError(f"rewrite {rw.name} returned {len(replacements)} replacements for "
                                   f"{len(node.outputs)} outputs of {node}")
            for old, new in zip(node.outputs, replacements):
                _check_replacement(rw, old, new)
                if new is not old and new.tag.trace is None:
                    new.tag.trace = old.tag.trace
                fgraph.replace(old, new, reason=rw.name, rebuild=False)
            fgraph.rebuild()
            fgraph.rewrite_log.append((stage, rw.name, str(node)))
            changed += 1
            break
    return changed


def _guard(rw, fgraph, node, call):
    from ..config import config

    try:
        return call()
    except RewriteError:
        raise
    except Exception as exc:
        if getattr(exc, "user_facing", False):  # e.g. no GPU, float64 refused: the user's to fix, not a bug
            raise
        where = f" on {node}" if node is not None else ""
        message = (f"graph rewrite {rw.name!r} ({rw.stage}) failed{where}: {type(exc).__name__}: {exc}. "
                   "This is a bug in coursekit (or in a rewrite you registered); compile with "
                   "mode=coursekit.Mode('FAST_RUN', ...).excluding('<name>') or set config.on_opt_error='warn' "
                   "to skip it.")
        if config.on_opt_error == "raise":
            raise RewriteError(message) from exc
        if config.on_opt_error == "warn":
            warnings.warn(message, stacklevel=3)
        return None


def _check_replacement(rw, old, new):
    if old.type.dtype != new.type.dtype or getattr(old.type, "ndim", None) != getattr(new.type, "ndim", None):
        raise RewriteError(f"rewrite {rw.name} tried to replace {old} ({old.type}) by {new} ({new.type})")


_LOADED = False


def _load_rewrite_modules():
    """Import the modules that register rewrites (once, on first compile)."""
    global _LOADED
    if not _LOADED:
        from . import algebra, basic, blas, fusion, placement, stabilize  # noqa: F401

        _LOADED = True
