"""Graph rewrites: small named functions, registered in stages.

A *local* rewrite looks at one Apply node and either returns ``None`` (not
applicable) or a list of replacement variables, one per output of the node.
It declares the op types it ``tracks`` (``tracks=[Elemwise]``): it is only
shown nodes whose op is one of those, so a pass does not ask every rewrite
about every node.  A *global* rewrite looks at the whole graph (merge,
fusion, GPU placement) and returns how many changes it made.  Rewrites are
registered in stages that run in this order::

    canonicalize -> stabilize -> specialize -> fusion -> placement -> transfer

Every rewrite carries tags: the ones it was registered with, plus its stage,
its own name, and ``fast_run`` (every registered rewrite is part of the
default mode).  A mode is a *query* over those tags (:class:`RewriteQuery`):
a rewrite runs when it has at least one ``include`` tag, every ``require``
tag and no ``exclude`` tag.  ``FAST_RUN`` includes ``fast_run``;
``FAST_COMPILE`` includes ``fast_compile`` (merging duplicates, GPU
placement, cutting transfer pairs: what is needed to run at all, and cheap).

Every rewrite that fires is logged in ``fgraph.rewrite_log`` so lessons and
tests can show exactly what the compiler did.  A rule of one's own is
registered with the same decorators and taken out again with
:func:`remove_rewrite` (lesson 9 does both).  A rewrite that raises stops
compilation with a message naming it (``config.on_opt_error`` can turn that
into a warning).
"""
from __future__ import annotations

import warnings
from collections import deque
from dataclasses import dataclass, field

from ..config import config

STAGES = ("canonicalize", "stabilize", "specialize", "fusion", "placement", "transfer")
MAX_PASSES = 30
FIRINGS_PER_NODE = 20  # a local pass that fires more often than this per node is looping


class RewriteError(RuntimeError):
    """A registered rewrite raised while compiling a function."""


@dataclass
class Rewrite:
    name: str
    stage: str
    fn: object
    kind: str  # "local" or "global"
    tags: tuple = field(default_factory=tuple)
    tracks: tuple = None  # op classes (or op instances) a local rewrite looks at; None: every node

    @property
    def all_tags(self):
        """The tags a query matches: the registered ones, the stage, the name and ``fast_run``."""
        return frozenset(self.tags) | {self.stage, self.name, "fast_run"}

    def looks_at(self, op):
        """Is ``op`` one this rewrite tracks?  A GPU twin counts as the CPU op it runs (``op.cpu_op``)."""
        if self.tracks is None:
            return True
        ops = (op, op.cpu_op) if hasattr(type(op), "cpu_class") else (op,)
        return any(isinstance(o, t) if isinstance(t, type) else o == t for o in ops for t in self.tracks)


@dataclass(frozen=True)
class RewriteQuery:
    """Which rewrites run: any tag of ``include``, all of ``require``, none of ``exclude``."""

    include: tuple = ("fast_run",)
    require: tuple = ()
    exclude: tuple = ()

    def selects(self, rw):
        tags = rw.all_tags
        return (any(t in tags for t in self.include) and all(t in tags for t in self.require)
                and not any(t in tags for t in self.exclude))


_DB: dict = {stage: [] for stage in STAGES}


def _register(kind, stage, tags, name, tracks):
    if stage not in _DB:
        raise ValueError(f"unknown rewrite stage {stage!r}; stages are {STAGES}")
    if tracks is not None:
        tracks = tuple(tracks) if isinstance(tracks, (list, tuple)) else (tracks,)

    def decorator(fn):
        rw = Rewrite(name or fn.__name__, stage, fn, kind, tuple(tags), tracks)
        _DB[stage] = [r for r in _DB[stage] if r.name != rw.name] + [rw]
        fn.rewrite = rw
        return fn

    return decorator


def local_rewrite(stage, *tags, name=None, tracks=None):
    """Register ``fn(fgraph, node) -> list of replacements | None`` in ``stage``.

    ``tracks``: the op classes (or ops) whose nodes the rewrite looks at; leave it
    out only for a rewrite that really concerns every node (constant folding).
    """
    return _register("local", stage, tags, name, tracks)


def global_rewrite(stage, *tags, name=None):
    """Register ``fn(fgraph) -> number of changes`` in ``stage``."""
    return _register("global", stage, tags, name, None)


def remove_rewrite(name):
    """Take the rewrite registered as ``name`` out of its stage, and return it.

    For rules of one's own: a lesson registers a rewrite, watches it fire, and
    removes it again (or removes a broken one it registered on purpose).  To run
    without a built-in rewrite, compile with ``Mode(...).excluding(name)``
    instead: removing it would change every later compilation in the process.
    ``rw.fn`` re-registers it: ``local_rewrite(rw.stage, *rw.tags, tracks=rw.tracks)(rw.fn)``.
    """
    for stage in STAGES:
        for rw in _DB[stage]:
            if rw.name == name:
                _DB[stage] = [r for r in _DB[stage] if r is not rw]
                return rw
    close = [r.name for r in registered() if name.lower() in r.name.lower() or r.name.lower() in name.lower()]
    hint = f"; did you mean {close}?" if close else " (registered() lists them)"
    raise LookupError(f"no rewrite named {name!r} is registered{hint}")


def registered(stage=None):
    """The registered rewrites (of one stage, or all), for display and tests."""
    stages = [stage] if stage else STAGES
    return [r for s in stages for r in _DB[s]]


def apply_stages(fgraph, query):
    """Run, stage by stage and each to a fixed point, the rewrites ``query`` selects.

    ``query``: a :class:`RewriteQuery` or anything with ``include``/``require``/``exclude``
    (a :class:`coursekit.Mode`).
    """
    query = RewriteQuery(tuple(query.include), tuple(getattr(query, "require", ())), tuple(query.exclude))
    for stage in STAGES:
        rewrites = [rw for rw in _DB[stage] if query.selects(rw)]
        if rewrites:
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
    """Show every node to the rewrites once, then only what changed, until nothing fires.

    A rewrite that fires replaces a node's outputs; the graph then reports what
    changed (``fgraph.changes``: the nodes it added, and the readers whose inputs
    are new), and only those are looked at again -- not the whole graph, as a
    re-walk after every firing would (that made compile time quadratic in depth).
    """
    changed = 0
    fgraph.changes = []
    by_op = {}  # which rewrites look at an op: decided once per op type, or per op where one tracks op instances
    per_instance = not all(rw.tracks is None or all(isinstance(t, type) for t in rw.tracks) for rw in local)
    queue = deque(fgraph.toposort())
    budget = FIRINGS_PER_NODE * (len(queue) + 100)
    while queue:
        node = queue.popleft()
        if node not in fgraph.apply_nodes:
            continue
        key = node.op if per_instance else type(node.op)  # ops are equal (and hash) by their __props__
        try:
            interested = by_op.get(key)
        except TypeError:  # an op whose props cannot be hashed: asked afresh
            key, interested = None, None
        if interested is None:
            interested = [rw for rw in local if rw.looks_at(node.op)]
            if key is not None:
                by_op[key] = interested
        for rw in interested:
            try:  # (no per-call wrapper: this loop is the hot path of compilation)
                replacements = rw.fn(fgraph, node)
            except RewriteError:
                raise
            except Exception as exc:  # noqa: BLE001 -- a failing rewrite is reported with the node it failed on
                replacements = _rewrite_failed(rw, node, exc)
            if not replacements:
                continue
            if len(replacements) != len(node.outputs):
                raise RewriteError(f"rewrite {rw.name} returned {len(replacements)} replacements for "
                                   f"{len(node.outputs)} outputs of {node}")
            for old, new in zip(node.outputs, replacements):
                _check_replacement(rw, old, new)
                if new is not old and new.tag.trace is None:
                    new.tag.trace = old.tag.trace
                fgraph.replace(old, new, reason=rw.name)
            fgraph.rewrite_log.append((stage, rw.name, str(node)))
            changed += 1
            queue.extend(fgraph.changes)
            fgraph.changes = []
            break
        if changed > budget:
            warnings.warn(f"rewrite stage {stage}: rewrites fired {changed} times on a graph of "
                          f"{len(fgraph.apply_nodes)} nodes; stopping (two rewrites undoing each other?)", stacklevel=3)
            break
    return changed


def _guard(rw, fgraph, node, call):
    try:
        return call()
    except RewriteError:
        raise
    except Exception as exc:  # noqa: BLE001 -- a failing rewrite is reported with the node it failed on
        return _rewrite_failed(rw, node, exc)


def _rewrite_failed(rw, node, exc):
    """Raise (or warn about) a rewrite that raised ``exc``; returns None when it is to be skipped."""
    if getattr(exc, "user_facing", False):  # e.g. no GPU, float64 refused: the user's to fix, not a bug
        raise exc
    where = f" on {node}" if node is not None else ""
    message = (f"graph rewrite {rw.name!r} ({rw.stage}) failed{where}: {type(exc).__name__}: {exc}. "
               "This is a bug in coursekit (or in a rewrite you registered); compile with "
               "mode=coursekit.Mode('FAST_RUN', ...).excluding('<name>') or set config.on_opt_error='warn' "
               "to skip it.")
    if config.on_opt_error == "raise":
        raise RewriteError(message) from exc
    if config.on_opt_error == "warn":
        warnings.warn(message, stacklevel=4)
    return None


def _check_replacement(rw, old, new):
    if old.type.dtype != new.type.dtype or getattr(old.type, "ndim", None) != getattr(new.type, "ndim", None):
        raise RewriteError(f"rewrite {rw.name} tried to replace {old} ({old.type}) by {new} ({new.type})")


# the modules that register rewrites (stabilize also holds the cost stabilisation grad() asks for)
from . import algebra, basic, blas, fusion, placement, stabilize  # noqa: E402,F401
